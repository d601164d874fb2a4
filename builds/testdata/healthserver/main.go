// Command healthserver is a gRPC server with only the standard health
// service: a stand-in for a user's server that has no coldstart Echo
// service, for the builds tests (instrumentation, PGO collection).
package main

import "github.com/coldstart-go/coldstart/internal/testservers/healthsrv"

func main() { healthsrv.Main("healthserver") }
