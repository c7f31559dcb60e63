// Command etcddev runs the embedded etcd of internal/etcdtest for make
// ha-demo on a machine without etcd: one member on a loopback port, its data
// in --data-dir, until SIGINT or SIGTERM. It is a development helper, not
// part of the fairsched binary.
//
//	etcddev --data-dir DIR [--listen 127.0.0.1:0]   prints "etcd listening on http://ADDR"
//	etcddev --free-ports N                           prints N free loopback host:port, one a line
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"syscall"

	"go.uber.org/zap"

	"github.com/fairsched/fairsched/internal/etcdtest"
)

func main() {
	dir := flag.String("data-dir", "", "the member's data directory (required)")
	listen := flag.String("listen", "127.0.0.1:0", "the client address")
	free := flag.Int("free-ports", 0, "print this many free loopback host:port and exit")
	flag.Parse()
	if *free > 0 {
		var lns []net.Listener
		for range *free {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				fmt.Fprintf(os.Stderr, "etcddev: cannot find a free port: %v\n", err)
				os.Exit(1)
			}
			lns = append(lns, ln)
			fmt.Println(ln.Addr())
		}
		for _, ln := range lns {
			ln.Close()
		}
		return
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "etcddev: cannot run without --data-dir")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	// Warnings and errors go to stderr, so that a member that stops says
	// why.
	logCfg := zap.NewProductionConfig()
	logCfg.Level = zap.NewAtomicLevelAt(zap.WarnLevel)
	logger, err := logCfg.Build()
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcddev: cannot make a logger: %v\n", err)
		os.Exit(1)
	}
	s, err := etcdtest.Start(*dir, etcdtest.Options{ClientAddr: *listen, Logger: logger})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("etcd listening on " + s.Endpoint)
	<-ctx.Done()
	s.Close()
}
