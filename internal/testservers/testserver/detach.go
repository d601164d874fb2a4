package main

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// detachEnv makes the testserver the middle process of -detach-child's
// double fork: it starts the sleep and exits at once.
const detachEnv = "TESTSERVER_DETACH_MIDDLE"

// detachSleep starts `sleep secs` the way a daemonizing helper does: a
// middle process in a new session (setsid) starts it and exits, so the
// sleep is orphaned (reparented to init, or to the nearest child
// subreaper), in neither this server's process group nor its session.
// Killing the server's process group does not reach it.
func detachSleep(secs string) error {
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("-detach-child: %w", err)
	}
	mid := exec.Command(self)
	mid.Env = append(os.Environ(), detachEnv+"="+secs)
	mid.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if out, err := mid.CombinedOutput(); err != nil {
		return fmt.Errorf("-detach-child: middle process: %v: %s", err, out)
	}
	return nil
}

// detachMiddle starts the sleep and returns without waiting for it.
func detachMiddle(secs string) int {
	cmd := exec.Command("sleep", secs)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "testserver: -detach-child: start sleep:", err)
		return 1
	}
	return 0
}
