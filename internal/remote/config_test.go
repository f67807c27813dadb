package remote

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/ssh"
)

// TestValidate_keyscanHint: the hint that says how to collect a missing
// host key runs ssh-keyscan where the host is reachable: here without a
// bastion, on the bastion with one.
func TestValidate_keyscanHint(t *testing.T) {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	key, err := ssh.NewPublicKey(pub)
	if err != nil {
		t.Fatal(err)
	}
	otherHost := "10.9.9.9 " + strings.TrimSpace(string(ssh.MarshalAuthorizedKey(key))) + "\n"
	bastion := &Config{Host: "bastion.example.com", Port: 2222, User: "jump", KnownHosts: otherHost, Password: "x"}
	cases := []struct {
		name       string
		cfg        Config
		want, not  []string
		noHostKeys bool
	}{
		{"known_hosts lacks the host", Config{Host: "10.0.0.11", KnownHosts: otherHost, Password: "x"},
			[]string{"add the output of `ssh-keyscan -p 22 10.0.0.11`"}, []string{"bastion"}, false},
		{"known_hosts lacks a host behind a bastion", Config{Host: "10.0.0.11", KnownHosts: otherHost, Password: "x", Bastion: bastion},
			[]string{"add the output of `ssh -p 2222 jump@bastion.example.com ssh-keyscan -p 22 10.0.0.11`",
				"run ssh-keyscan on the bastion bastion.example.com:2222", "compare the fingerprints", "a known_hosts line for its own address, or bastion_host_key"}, nil, false},
		{"no host key at all, behind a bastion", Config{Host: "10.0.0.11", Port: 2200, Password: "x", Bastion: bastion},
			[]string{"`ssh -p 2222 jump@bastion.example.com ssh-keyscan -p 2200 10.0.0.11`", "run ssh-keyscan on the bastion bastion.example.com:2222"}, nil, true},
		{"no host key at all", Config{Host: "10.0.0.11", Password: "x"},
			[]string{"a line of `ssh-keyscan -p 22 10.0.0.11`"}, []string{"bastion"}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.cfg.Validate()
			if err == nil {
				t.Fatal("Validate accepted a configuration without the host's key")
			}
			if errors.Is(err, ErrNoHostKey) != tc.noHostKeys {
				t.Errorf("errors.Is(ErrNoHostKey) = %v, want %v: %v", !tc.noHostKeys, tc.noHostKeys, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("the error does not say %q: %v", w, err)
				}
			}
			for _, n := range tc.not {
				if strings.Contains(err.Error(), n) {
					t.Errorf("the error says %q: %v", n, err)
				}
			}
		})
	}
}
