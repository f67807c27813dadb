package remote

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// BenchmarkVerifierFleetKnownHosts: what the host key verifiers of a whole
// fleet cost one provider process when every host shares a provider-wide
// known_hosts (three keys per host, as ssh-keyscan writes them). Metric:
// ns per host, caches cleared each round.
func BenchmarkVerifierFleetKnownHosts(b *testing.B) {
	keys := []testhost.Key{testhost.NewKey(b), testhost.NewECDSAKey(b), testhost.RSAKey(b)}
	for _, hosts := range []int{100, 1000} {
		var content strings.Builder
		for i := 0; i < hosts; i++ {
			for _, k := range keys {
				fmt.Fprintf(&content, "[10.1.%d.%d]:2222 %s\n", i/250, 1+i%250, k.Public())
			}
		}
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			for b.Loop() {
				clearCaches()
				for i := 0; i < hosts; i++ {
					c := Config{Host: fmt.Sprintf("10.1.%d.%d", i/250, 1+i%250), Port: 2222, KnownHosts: content.String()}
					v, err := c.verifier()
					if err != nil {
						b.Fatal(err)
					}
					if !v.knowsHost || len(v.algorithms) != 8 { // 3 key types, RSA twice, and their certificates
						b.Fatalf("%s: the verifier does not know the host's 3 keys: %v", c.Address(), v.algorithms)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*hosts), "ns/host")
		})
	}
}

func clearCaches() {
	verifierCache.Clear()
	knownHostsCache.Clear()
}
