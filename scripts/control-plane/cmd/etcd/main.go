// etcd: the server's own entry point (go.etcd.io/etcd/server/v3/etcdmain), as etcd's main.go does.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
