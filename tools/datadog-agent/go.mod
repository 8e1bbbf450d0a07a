module github.com/clusterdns/clusterdns/tools/datadog-agent

go 1.25.0

require github.com/DataDog/datadog-agent/pkg/proto v0.82.0

require (
	github.com/philhofer/fwd v1.2.0 // indirect
	github.com/planetscale/vtprotobuf v0.6.1-0.20240319094008-0393e58bdf10 // indirect
	github.com/tinylib/msgp v1.6.4 // indirect
	google.golang.org/protobuf v1.36.12-0.20260116114154-8c4c4ae446ca // indirect
)
