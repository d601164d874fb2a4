// Package pgocollect collects the CPU profile a pgo arm is built with: it
// starts the server (the default arm built with the debug hook) as a plain
// process, keeps it busy with steady's load generator, and fetches a CPU
// profile from its debug listener. builds calls it through
// builds.Options.CollectProfile, so builds itself runs nothing it builds.
package pgocollect

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/coldstart-go/coldstart/budget"
	"github.com/coldstart-go/coldstart/builds"
	"github.com/coldstart-go/coldstart/launch"
	"github.com/coldstart-go/coldstart/prober"
	"github.com/coldstart-go/coldstart/steady"
)

// Load is the load the profile is taken under: loadWorkers goroutines over
// one connection calling Echo with a loadPayload-byte payload (health
// checks when the server has no Echo service).
const (
	loadWorkers = 4
	loadPayload = 64
)

var _ builds.ProfileCollector = Collect

// Collect runs bin, loads it and fetches a secs-long CPU profile from its
// debug listener ($COLDSTART_DEBUG_ADDR). Spawned command lines go to log
// (nil = nowhere).
func Collect(ctx context.Context, bin builds.Artifact, secs int, log io.Writer) ([]byte, builds.ProfileNote, error) {
	return collect(ctx, launch.Process{}, bin, secs, log)
}

// CollectWith is Collect with the server started by l (launch.AsUser: as
// the user the measured servers run as).
func CollectWith(l launch.Launcher) builds.ProfileCollector {
	return func(ctx context.Context, bin builds.Artifact, secs int, log io.Writer) ([]byte, builds.ProfileNote, error) {
		return collect(ctx, l, bin, secs, log)
	}
}

func collect(ctx context.Context, launcher launch.Launcher, bin builds.Artifact, secs int, log io.Writer) ([]byte, builds.ProfileNote, error) {
	note := builds.ProfileNote{Server: bin.Path, Package: bin.Package, Arm: "default, with the debug hook", GoVersion: bin.GoVersion, DurationS: float64(secs)}
	target, err := prober.FreeTCP()
	if err != nil {
		return nil, note, err
	}
	debug, err := otherFreeTCP(target)
	if err != nil {
		return nil, note, err
	}
	inst, err := launcher.Launch(ctx, launch.Spec{
		Arm:    "pgo-collect",
		Path:   bin.Path,
		Env:    []string{"COLDSTART_DEBUG_ADDR=" + debug.Address},
		Target: target,
		ID:     budget.NewID(),
		Log:    log,
	})
	if err != nil {
		return nil, note, err
	}
	defer inst.Stop(context.WithoutCancel(ctx))
	if _, err := prober.WaitReady(ctx, inst, target, prober.Health{}, prober.WaitOptions{}); err != nil {
		return nil, note, err
	}
	note.Endpoint = "http://" + debug.Address + "/debug/pprof/profile?seconds=" + fmt.Sprint(secs)

	lctx, stopLoad := context.WithCancel(ctx)
	type loaded struct {
		r   steady.LoadResult
		err error
	}
	done := make(chan loaded, 1)
	go func() {
		r, err := steady.Load(lctx, target, loadWorkers, loadPayload)
		done <- loaded{r, err}
	}()
	prof, err := fetchProfile(ctx, note.Endpoint, secs)
	stopLoad()
	l := <-done
	if l.err != nil {
		return nil, note, l.err
	}
	if err != nil {
		return nil, note, err
	}
	if err := builds.CheckProfile(prof); err != nil {
		return nil, note, fmt.Errorf("fetched profile from %s: %w", note.Endpoint, err)
	}
	note.Load = l.r.Load
	note.CollectedAt = time.Now().UTC().Format(time.RFC3339)
	note.Calls, note.Errors = l.r.Calls, l.r.Errors
	note.CallsPerS = float64(note.Calls) / l.r.Elapsed.Seconds()
	return prof, note, nil
}

// otherFreeTCP picks a free port other than t's: FreeTCP closes the port
// it found, so two calls may return the same one.
func otherFreeTCP(t prober.Target) (prober.Target, error) {
	for i := 0; ; i++ {
		d, err := prober.FreeTCP()
		if err != nil || d.Address != t.Address || i == 10 {
			return d, err
		}
	}
}

// fetchProfile GETs a CPU profile, retrying briefly while the debug
// listener comes up.
func fetchProfile(ctx context.Context, url string, secs int) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(secs)*time.Second+30*time.Second)
	defer cancel()
	var lastErr error
	for attempt := 0; attempt < 20; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return nil, err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			lastErr = err
			select {
			case <-ctx.Done():
				return nil, fmt.Errorf("fetch profile %s: %w", url, lastErr)
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("fetch profile %s: %w", url, err)
		}
		if resp.StatusCode != http.StatusOK {
			t := &launch.TailBuffer{Max: 500}
			t.Write(b)
			return nil, fmt.Errorf("fetch profile %s: %s: %s", url, resp.Status, strings.TrimSpace(t.String()))
		}
		return b, nil
	}
	return nil, fmt.Errorf("fetch profile %s: %w (is the server's debug listener on $COLDSTART_DEBUG_ADDR?)", url, lastErr)
}
