package main

import (
	"context"
	"flag"
	"log"

	"github.com/hashicorp/terraform-plugin-framework/providerserver"

	"github.com/kha/terraform-provider-kha/internal/provider"
)

// version and commit are set by goreleaser's ldflags for released binaries.
var (
	version = "dev"
	commit  = "none"
)

func main() {
	var debug bool
	flag.BoolVar(&debug, "debug", false, "run the provider with support for debuggers like delve")
	flag.Parse()

	err := providerserver.Serve(context.Background(), provider.New(version, commit), providerserver.ServeOpts{
		Address: "registry.terraform.io/kha/kha",
		Debug:   debug,
	})
	if err != nil {
		log.Fatal(err.Error())
	}
}
