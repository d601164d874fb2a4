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
	p := l.Process
	s, err := asUser(l.Stage, s, &p)
	if err != nil {
		return nil, err
	}
	return p.Launch(ctx, s)
}

// asUser readies s and p to start as stage's user (nil stage, or
// coldstart's own user: unchanged): s runs the staged copy of its binary,
// its socket directory is handed over, p drops to the user's credential.
// Every launcher that starts a server process (plain, prebound, the
// snapshot arm's dumped server) goes through it.
func asUser(stage *runas.Stage, s Spec, p *Process) (Spec, error) {
	if stage == nil {
		return s, nil
	}
	u := stage.User()
	if u.Self {
		return s, nil
	}
	path, err := stage.Binary(s.Path)
	if err != nil {
		return s, fmt.Errorf("start %s: %w", s.Arm, err)
	}
	if s.Target.Network == "unix" {
		if err := runas.HandOver(filepath.Dir(s.Target.Address), u, s.Log); err != nil {
			return s, fmt.Errorf("start %s: %w", s.Arm, err)
		}
	}
	if s.Log != nil {
		fmt.Fprintf(s.Log, "+ # as uid:gid %s (--run-as), %s staged as %s\n", u, s.Path, path)
	}
	s.Path = path
	p.Credential = u.Credential()
	return s, nil
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
