package launch

import (
	"fmt"
	"os"

	"github.com/coldstart-go/coldstart/internal/leftovers"
	"github.com/coldstart-go/coldstart/internal/runas"
	"github.com/coldstart-go/coldstart/prober"
)

// SocketTarget makes a fresh directory for one instance's Unix socket and
// returns the socket's target there (prober.SocketPath). The directory,
// named prefix followed by random characters, is made under
// runas.TempDir(), so that a server run as another user reaches it, and
// it is recorded in the run's state file before it is made, so that a
// killed run's is swept by the next. remove removes it and its record:
// call it once the instance has stopped.
func SocketTarget(prefix string) (t prober.Target, remove func(), err error) {
	dir, forget, err := leftovers.MkdirTemp(runas.TempDir(), prefix)
	if err != nil {
		return prober.Target{}, nil, fmt.Errorf("make socket dir: %w", err)
	}
	return prober.Target{Network: "unix", Address: prober.SocketPath(dir)}, func() { os.RemoveAll(dir); forget() }, nil
}
