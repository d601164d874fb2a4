package leangrpc

import (
	"context"
	"sync"
	"testing"
)

// BenchmarkUnary calls an in-process grpc-go server (so the figures mix
// both sides; steady's benchmarks meter the client alone): -benchmem shows
// the client's allocations per call with the server's.
func BenchmarkUnary(b *testing.B) {
	for _, par := range []int{1, 32} {
		b.Run(map[int]string{1: "1", 32: "32"}[par], func(b *testing.B) {
			t := &testing.T{}
			addr := serve(t, "tcp")
			lc := dial(t, "tcp", addr)
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			per := b.N / par
			for w := 0; w < par; w++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					u := lc.NewUnary("/coldstart.echo.v1.Echo/Echo", []byte{0x0a, 8, 'a', 'b', 'c', 'd', 'e', 'f', 'g', 'h'})
					for i := 0; i < per; i++ {
						if _, err := u.Call(context.Background()); err != nil {
							b.Error(err)
							return
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}
