// Command withdb is a gRPC server with a dependency, as real services
// have: before it listens it opens a PostgreSQL connection pool
// (github.com/jackc/pgx/v5) and pings the database, so the dial is part of
// its cold start. It then serves what the bundled sample does (gRPC
// health and Echo, on --addr, --unix or ":$PORT"); health says SERVING
// only once the ping succeeded, and a database it cannot reach is an exit
// with status 1 before it listens.
//
// README.md measures it with coldstart, a throwaway PostgreSQL cluster
// started by --setup (pg.sh) and stopped by --cleanup.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/coldstart-go/coldstart/internal/echo"
)

func main() {
	o := echo.Options{}
	flag.StringVar(&o.Addr, "addr", "", "gRPC listen address host:port (default \":$PORT\")")
	flag.StringVar(&o.Unix, "unix", "", "gRPC Unix socket path (replaces --addr)")
	dsn := flag.String("db", os.Getenv("DATABASE_URL"), "PostgreSQL connection string, a URL or key=value pairs such as \"host=/path/to/socket/dir dbname=postgres user=postgres\" (default $DATABASE_URL; \"\" = none: the same server without the dial, for comparison)")
	dbTimeout := flag.Duration("db-timeout", 10*time.Second, "give up on the database's ping after this long")
	flag.Parse()
	if o.Addr == "" && o.Unix == "" {
		if p := os.Getenv("PORT"); p != "" {
			o.Addr = ":" + p
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *dsn != "" {
		pool, err := open(ctx, *dsn, *dbTimeout)
		if err != nil {
			fmt.Fprintln(os.Stderr, "withdb:", err)
			os.Exit(1)
		}
		defer pool.Close()
	}
	if err := echo.Serve(ctx, o); err != nil {
		fmt.Fprintln(os.Stderr, "withdb:", err)
		os.Exit(1)
	}
}

// open makes the pool and pings the database through it: pgxpool.New
// connects lazily, so without the ping the first request would pay the
// dial (and a wrong address would surface only then).
func open(ctx context.Context, dsn string, timeout time.Duration) (*pgxpool.Pool, error) {
	pool, err := pgxpool.New(ctx, dsn)
	if err != nil {
		return nil, fmt.Errorf("open database: %w", err)
	}
	pctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if err := pool.Ping(pctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("ping database: %w", err)
	}
	return pool, nil
}
