package launch

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/coldstart-go/coldstart/internal/pagecache"
	"github.com/coldstart-go/coldstart/internal/runas"
)

// AsUser launches plain processes as Stage's user (see internal/runas):
// from a copy of the binary that user can execute, with the Unix socket's
// directory handed to it, dropping to its uid and gid between fork and
// exec. The root parent still places the process in its budget first.
// For coldstart's own user it is Process as it is.
type AsUser struct {
	Process
	Stage *runas.Stage
}

var _ Launcher = AsUser{}

// Launch starts s as Stage's user.
func (l AsUser) Launch(ctx context.Context, s Spec) (Instance, error) {
	u := l.Stage.User()
	if u.Self {
		return l.Process.Launch(ctx, s)
	}
	path, err := l.Stage.Binary(s.Path)
	if err != nil {
		return nil, fmt.Errorf("start %s: %w", s.Arm, err)
	}
	if s.Target.Network == "unix" {
		if err := runas.HandOver(filepath.Dir(s.Target.Address), u, s.Log); err != nil {
			return nil, fmt.Errorf("start %s: %w", s.Arm, err)
		}
	}
	if s.Log != nil {
		fmt.Fprintf(s.Log, "+ # as uid:gid %s (--run-as), %s staged as %s\n", u, s.Path, path)
	}
	s.Path = path
	p := l.Process
	p.Credential = u.Credential()
	return p.Launch(ctx, s)
}

// CacheFiles lists what starting path reads: the copy the user runs (made
// now if need be) and the shared libraries it loads, for --page-cache cold.
func (l AsUser) CacheFiles(ctx context.Context, path string) ([]string, error) {
	p, err := l.Stage.Binary(path)
	if err != nil {
		return nil, err
	}
	return pagecache.Files(p)
}
