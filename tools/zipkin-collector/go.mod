module github.com/clusterdns/clusterdns/tools/zipkin-collector

go 1.24

require github.com/openzipkin/zipkin-go v0.4.3
