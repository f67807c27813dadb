package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime/debug"
	"runtime/pprof"
	"strconv"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/kha/terraform-provider-kha/internal/provider"
)

// version and commit are set by goreleaser's ldflags for released binaries.
var (
	version = "dev"
	commit  = "none"
)

func main() {
	var withDebugger bool
	flag.BoolVar(&withDebugger, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()

	// The framework allocates short-lived values per attribute value of every
	// request; a plugin process lives for one command, so trading heap for
	// fewer collections halves the collector's share at thousands of nodes.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if err := provider.AlignLogLevels(); err != nil {
		log.Fatal(err.Error())
	}
	// KHA_CPU_PROFILE_DIR makes each provider process write a CPU profile
	// (cpu-<pid>.pprof) there, for profiling under the real CLI, and the CPU
	// it used (cpu-<pid>.ns: user and system nanoseconds), which tells the
	// provider's share of a command's CPU from Terraform's.
	if dir := os.Getenv("KHA_CPU_PROFILE_DIR"); dir != "" {
		stop, err := profileCPU(dir)
		if err != nil {
			log.Fatal(err.Error())
		}
		defer stop()
	}

	err := providerserver.Serve(context.Background(), provider.New(version, commit), providerserver.ServeOpts{
		Address: "registry.terraform.io/kha/kha",
		Debug:   withDebugger,
	})
	if err != nil {
		log.Fatal(err.Error())
	}
}

func profileCPU(dir string) (stop func(), err error) {
	name := filepath.Join(dir, fmt.Sprintf("cpu-%d", os.Getpid()))
	f, err := os.Create(name + ".pprof")
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
		if ns, ok := processCPU(); ok {
			_ = os.WriteFile(name+".ns", []byte(strconv.FormatInt(ns, 10)), 0o644)
		}
	}, nil
}
