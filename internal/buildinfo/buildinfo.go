// Package buildinfo holds the provider's version as the binary was built
// (goreleaser's ldflags set main.version; main hands it over here), for the
// places that name the provider to others: HTTP requests and logs.
package buildinfo

import "sync/atomic"

// Name is the provider's binary name, the product in its User-Agent.
const Name = "terraform-provider-kha"

var version atomic.Value

// SetVersion records the version; an empty one reads as "dev".
func SetVersion(v string) {
	if v == "" {
		v = "dev"
	}
	version.Store(v)
}

// Version is the recorded version, "dev" before SetVersion.
func Version() string {
	if v, ok := version.Load().(string); ok {
		return v
	}
	return "dev"
}

// UserAgent is the User-Agent of the provider's HTTP requests:
// terraform-provider-kha/<version>.
func UserAgent() string {
	return Name + "/" + Version()
}
