package buildinfo

import "testing"

func TestUserAgent(t *testing.T) {
	for _, tc := range []struct{ set, want string }{
		{"", "terraform-provider-kha/dev"},
		{"0.1.0", "terraform-provider-kha/0.1.0"},
		{"0.2.0-rc1", "terraform-provider-kha/0.2.0-rc1"},
	} {
		SetVersion(tc.set)
		if got := UserAgent(); got != tc.want {
			t.Errorf("SetVersion(%q): UserAgent() = %q, want %q", tc.set, got, tc.want)
		}
	}
}
