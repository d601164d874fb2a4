// Command slowinit is a gRPC health server whose package heavy has a slow,
// allocating init (see heavy): the server coldstart explain must rank
// first. It listens on 127.0.0.1:$PORT.
package main

import (
	"github.com/coldstart-go/coldstart/internal/testservers/healthsrv"
	_ "github.com/coldstart-go/coldstart/internal/testservers/slowinit/heavy"
)

func main() { healthsrv.Main("slowinit") }
