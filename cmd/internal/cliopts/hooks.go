package cliopts

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/coldstart-go/coldstart/campaign"
	"github.com/coldstart-go/coldstart/internal/hooks"
	"github.com/coldstart-go/coldstart/prober"
)

// HookFlags are --setup, --prepare, --cleanup and --hook-timeout: shell
// commands a campaign is bracketed with (internal/hooks), as hyperfine's.
type HookFlags struct {
	// Setup, Prepare and Cleanup are the commands as given, placeholders
	// unexpanded ("" = none).
	Setup, Prepare, Cleanup string
	// HookTimeout bounds each run of any of them.
	HookTimeout time.Duration
}

// defaultHookTimeout is --hook-timeout's default: room for a database's
// initdb on a slow machine.
const defaultHookTimeout = 2 * time.Minute

func (h *HookFlags) bind(f *pflag.FlagSet) {
	f.StringVar(&h.Setup, "setup", "", "shell command run once before the campaign (before the arms are built: a pgo profile or a snapshot already needs what it starts), e.g. to start a database the server dials; may name {tmpdir}, a directory coldstart makes for the campaign and removes after, which server arguments and --env values may name too; if it fails, nothing is measured and its output's tail is printed")
	f.StringVar(&h.Prepare, "prepare", "", "shell command run before every server start, not timed; may name {tmpdir}, {arm} and the address the server is about to get: {addr}, {host}, {port} or {socket}")
	f.StringVar(&h.Cleanup, "cleanup", "", "shell command run once after the campaign, also when it failed, was interrupted (SIGINT, SIGTERM) or --setup failed, e.g. to stop what --setup started; may name {tmpdir}")
	f.DurationVar(&h.HookTimeout, strings.TrimPrefix(hooks.TimeoutFlag, "--"), h.HookTimeout, "give up on one run of --setup, --prepare or --cleanup after this long, killing all it started that is still in its process group")
}

func (h *HookFlags) config() hooks.Config {
	return hooks.Config{Setup: h.Setup, Prepare: h.Prepare, Cleanup: h.Cleanup, Timeout: h.HookTimeout}
}

func (h *HookFlags) validate() error {
	if h.HookTimeout <= 0 {
		return fmt.Errorf("%s: %v, want a positive duration", hooks.TimeoutFlag, h.HookTimeout)
	}
	return h.config().Check()
}

// tmpDirUsed reports whether the server's arguments or environment name
// {tmpdir}.
func (c *Common) tmpDirUsed() bool {
	for _, s := range append(append([]string(nil), c.ServerArgs...), c.Env...) {
		if strings.Contains(s, "{tmpdir}") {
			return true
		}
	}
	return false
}

// beginHooks makes the campaign's {tmpdir} and runs --setup, when there
// are hooks or the server's arguments name {tmpdir} (nil, nil when there
// is neither). It fills {tmpdir} in c.ServerArgs and c.Env, so what
// starts servers from them (campaign.BuildArms, steady) sees the path.
// Each hook's run is recorded in r ("hook").
func (c *Common) beginHooks(ctx context.Context, r *Results) (*hooks.Campaign, error) {
	cfg := c.HookFlags.config()
	cfg.TmpDir = c.tmpDirUsed()
	if !cfg.Any() {
		return nil, nil
	}
	cfg.Log = c.Log()
	cfg.Record = func(res hooks.Result) error { return r.Add("hook", res) }
	hc, err := hooks.Begin(ctx, cfg)
	if err != nil {
		return nil, err
	}
	for _, l := range [][]string{c.ServerArgs, c.Env} {
		for i, s := range l {
			l[i] = strings.ReplaceAll(s, "{tmpdir}", hc.TmpDir())
		}
	}
	return hc, nil
}

// endHooks hands hc to built: each arm runs --prepare before each start,
// and Close runs --cleanup and removes {tmpdir}, saying on the error
// writer when the cleanup failed (Close's callers defer it unchecked).
func (c *Common) endHooks(hc *hooks.Campaign, built *campaign.Built) {
	if hc == nil {
		return
	}
	for i := range built.Arms {
		name := built.Arms[i].Name
		built.Arms[i].Prepare = func(ctx context.Context, t prober.Target) error {
			v := prober.VarsFor(t)
			return hc.Prepare(ctx, name, map[string]string{"addr": v.Addr, "host": v.Host, "port": v.Port, "socket": v.Socket})
		}
	}
	built.OnClose(func() error {
		err := hc.End()
		if err != nil {
			c.Notef("%v", err)
		}
		return err
	})
}
