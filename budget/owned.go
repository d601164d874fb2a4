package budget

import (
	"errors"
	"os"

	"github.com/coldstart-go/coldstart/internal/leftovers"
)

// owned are the cgroup directories a placement created, each recorded in
// the run's state file before it was made, so that a coldstart killed with
// SIGKILL leaves a record the next run (or coldstart clean) removes them by.
type owned struct {
	dirs []string
	done []func()
}

func (o *owned) add(dir string) error {
	done, err := leftovers.Add(leftovers.Entry{Kind: leftovers.Cgroup, Path: dir})
	if err != nil {
		return err
	}
	o.dirs, o.done = append(o.dirs, dir), append(o.done, done)
	return nil
}

// forgetGone drops the record of every directory that is gone.
func (o *owned) forgetGone() {
	for i, d := range o.dirs {
		if _, err := os.Stat(d); errors.Is(err, os.ErrNotExist) {
			o.done[i]()
		}
	}
}
