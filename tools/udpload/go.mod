module github.com/clusterdns/clusterdns/tools/udpload

go 1.24
