package remote

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// BenchmarkVerifierFleetKnownHosts: what the host key verifiers of a whole
// fleet cost one provider process when every host shares a provider-wide
// known_hosts (three keys per host, as ssh-keyscan writes them). Metric:
// ns per host, caches cleared each round.
func BenchmarkVerifierFleetKnownHosts(b *testing.B) {
	for _, hosts := range []int{100, 1000} {
		content := fleetKnownHosts(b, hosts)
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			for b.Loop() {
				clearCaches()
				for i := 0; i < hosts; i++ {
					c := Config{Host: fmt.Sprintf("10.1.%d.%d", i/250, 1+i%250), Port: 2222, KnownHosts: content}
					v, err := c.verifier()
					if err != nil {
						b.Fatal(err)
					}
					if !v.KnowsHost || len(v.Algorithms) != 8 { // 3 key types, RSA twice, and their certificates
						b.Fatalf("%s: the verifier does not know the host's 3 keys: %v", c.Address(), v.Algorithms)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*hosts), "ns/host")
		})
	}
}

// fleetKnownHosts is a provider-wide known_hosts of hosts 10.1.x.y, port
// 2222, with three keys each, as ssh-keyscan writes them.
func fleetKnownHosts(b *testing.B, hosts int) string {
	keys := []testhost.Key{testhost.NewKey(b), testhost.NewECDSAKey(b), testhost.RSAKey(b)}
	var content strings.Builder
	for i := 0; i < hosts; i++ {
		for _, k := range keys {
			fmt.Fprintf(&content, "[10.1.%d.%d]:2222 %s\n", i/250, 1+i%250, k.Public())
		}
	}
	return content.String()
}

func clearCaches() {
	verifierCache.Clear()
	knownHostsCache.Clear()
	knownHostsDigests.Clear()
}

// BenchmarkPoolLookupFleetKnownHosts: what finding a host's pooled
// connection costs each resource (the checks and the pool's key, before
// any dial) when every host shares a provider-wide known_hosts, which
// grows with the fleet. Metric: ns per host; the caches stay warm, as in
// a provider process past its first resource.
func BenchmarkPoolLookupFleetKnownHosts(b *testing.B) {
	for _, hosts := range []int{100, 1000} {
		content := fleetKnownHosts(b, hosts)
		b.Run(fmt.Sprintf("hosts=%d", hosts), func(b *testing.B) {
			clearCaches()
			p := NewPool(nil)
			// Terraform's requests each bring their own copy of the
			// content: the lookups use another copy than the first one.
			first, later := content, strings.Clone(content)
			user := testhost.NewKey(b).PEM
			if _, err := p.conn(Config{Host: "10.1.0.1", Port: 2222, PrivateKey: user, KnownHosts: first}); err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				for i := 0; i < hosts; i++ {
					c := Config{Host: fmt.Sprintf("10.1.%d.%d", i/250, 1+i%250), Port: 2222, PrivateKey: user, KnownHosts: later}
					if _, err := p.conn(c); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*hosts), "ns/host")
		})
	}
}

// BenchmarkHostKeyTypeCost: what a connection (handshake and login, no
// session) costs the host in sshd's CPU and the client in wall time, by
// the host key type the client asks for: why Algorithms asks for Ed25519
// before RSA. Metrics: sshd-ms/conn, and ns/op per connection.
func BenchmarkHostKeyTypeCost(b *testing.B) {
	for _, algorithm := range []string{ssh.KeyAlgoED25519, ssh.KeyAlgoECDSA256, ssh.KeyAlgoRSASHA512} {
		b.Run(algorithm, func(b *testing.B) {
			s := testhost.Start(b, testhost.Options{})
			cfg := &ssh.ClientConfig{User: testhost.UnprivilegedUser, Auth: []ssh.AuthMethod{ssh.PublicKeys(s.ClientKey.Signer)},
				HostKeyCallback: ssh.InsecureIgnoreHostKey(), HostKeyAlgorithms: []string{algorithm}}
			before, err := s.CPUTime()
			if err != nil {
				b.Fatal(err)
			}
			for b.Loop() {
				c, err := ssh.Dial("tcp", s.Address(), cfg)
				if err != nil {
					b.Fatal(err)
				}
				c.Close()
			}
			b.StopTimer()
			after, err := s.CPUTime()
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64((after-before).Microseconds())/1000/float64(b.N), "sshd-ms/conn")
		})
	}
}
