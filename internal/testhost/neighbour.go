package testhost

import (
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"
)

// Neighbour is another local user of the test hosts, with no sudo, that
// scripts/setup-host.sh creates: the hostile neighbour who can write next
// to the files kha manages.
const Neighbour = "kha-neighbour"

// RequireNeighbour checks that Neighbour exists.
func RequireNeighbour(t testing.TB) {
	t.Helper()
	Real(t, "the local user "+Neighbour)
	_, err := user.Lookup(Neighbour)
	Require(t, err == nil, "user "+Neighbour+" does not exist")
}

// AsNeighbour runs a shell command as Neighbour, as that user would on
// the host, and fails the test when it fails.
func AsNeighbour(t testing.TB, command string) {
	t.Helper()
	if out, err := exec.Command("runuser", "-u", Neighbour, "--", "sh", "-c", command).CombinedOutput(); err != nil {
		t.Fatalf("as %s: %s: %v\n%s", Neighbour, command, err, out)
	}
}

// HostDir is a new directory with mode (the sticky bit included) that
// owner and group own, in a root-owned 0755 directory as /etc is; it goes
// when the test ends.
func HostDir(t testing.TB, mode os.FileMode, owner, group string) string {
	t.Helper()
	parent, err := os.MkdirTemp("", "kha-host-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	dir := filepath.Join(parent, "conf")
	if err := os.Chmod(parent, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	u, err := user.Lookup(owner)
	if err != nil {
		t.Fatal(err)
	}
	g, err := user.LookupGroup(group)
	if err != nil {
		t.Fatal(err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(g.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, mode); err != nil {
		t.Fatal(err)
	}
	return dir
}

// StickyDir is a directory every local user can write, with the sticky
// bit, as /tmp.
func StickyDir(t testing.TB) string { return HostDir(t, os.ModeSticky|0o777, "root", "root") }
