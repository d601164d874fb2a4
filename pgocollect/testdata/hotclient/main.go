// Command hotclient is a user's own load generator for hotserver: 4
// goroutines call hot.v1.Hot/Spin {n: -n} at -addr back to back until
// killed. It exits 1 when its first call fails.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/encoding/protowire"
)

// raw passes messages through as their wire bytes.
type raw struct{}

func (raw) Marshal(v any) ([]byte, error)   { return *v.(*[]byte), nil }
func (raw) Unmarshal(b []byte, v any) error { *v.(*[]byte) = append([]byte(nil), b...); return nil }
func (raw) Name() string                    { return "proto" }

func main() {
	addr := flag.String("addr", "", "server address")
	n := flag.Int("n", 20000, "rounds per call")
	flag.Parse()
	cc, err := grpc.NewClient(*addr, grpc.WithTransportCredentials(insecure.NewCredentials()), grpc.WithDefaultCallOptions(grpc.ForceCodec(raw{})))
	if err != nil {
		fmt.Fprintln(os.Stderr, "hotclient:", err)
		os.Exit(1)
	}
	req := protowire.AppendVarint(protowire.AppendTag(nil, 1, protowire.VarintType), uint64(*n))
	call := func(ctx context.Context) error {
		var resp []byte
		return cc.Invoke(ctx, "/hot.v1.Hot/Spin", &req, &resp)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	err = call(ctx)
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "hotclient: first call:", err)
		os.Exit(1)
	}
	for range 3 {
		go func() {
			for call(context.Background()) == nil {
			}
		}()
	}
	for call(context.Background()) == nil {
	}
	fmt.Fprintln(os.Stderr, "hotclient: a call failed")
	os.Exit(1)
}
