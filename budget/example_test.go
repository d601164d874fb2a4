package budget_test

import (
	"errors"
	"fmt"
	"os/exec"
	"time"

	"github.com/coldstart-go/coldstart/budget"
)

// A launcher runs each server in each budget of a --budget list.
func ExampleBudget_Place() {
	budgets, err := budget.Parse("cpus=0;cores=0.5,mem=256Mi;max")
	if err != nil {
		fmt.Println(err) // --budget: ...
		return
	}
	for _, b := range budgets {
		if err := b.Check(); errors.Is(err, budget.ErrNoCgroup) {
			fmt.Println(err) // not root: cores= and mem= need a cgroup, cpus= works
			continue
		}
		pl, err := b.Place(budget.NewID())
		if err != nil {
			fmt.Println(err)
			continue
		}
		cmd := exec.Command("./server")
		if err := pl.Start(cmd); err != nil { // instead of cmd.Start()
			pl.Close()
			continue
		}
		t0 := pl.Started() // the fork, after the budget was applied
		// ... probe until the first RPC succeeds ...
		u, _ := pl.Usage() // CPU seconds, memory peak, OOM kills so far
		fmt.Println(b, time.Since(t0), u.CPUSeconds, u.MemPeakBytes, b.GOMAXPROCS())
		_ = cmd.Process.Kill()
		err = pl.Explain(cmd.Wait()) // errors.Is(err, budget.ErrMemoryLimit) when the limit killed it
		pl.Close()                   // kills what is left in the cgroup, removes it
	}
}
