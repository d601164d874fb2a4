// Package heavy has an init that costs a known amount: it sleeps
// $SLOWINIT_MS milliseconds (default 30) and allocates one 4 MiB buffer,
// then prints its own wall time to stderr ("heavy: init took 30.071 ms"),
// so a test can hold coldstart explain's figure against it.
package heavy

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

// BufBytes is the size of the one buffer init allocates.
const BufBytes = 4 << 20

// Buf is that buffer, kept so the allocation is not optimized away.
var Buf []byte

func init() {
	start := time.Now()
	d := 30 * time.Millisecond
	if v, err := strconv.Atoi(os.Getenv("SLOWINIT_MS")); err == nil && v >= 0 {
		d = time.Duration(v) * time.Millisecond
	}
	time.Sleep(d)
	Buf = make([]byte, BufBytes)
	fmt.Fprintf(os.Stderr, "heavy: init took %.3f ms\n", float64(time.Since(start))/float64(time.Millisecond))
}
