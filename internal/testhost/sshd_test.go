package testhost

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Stopping a server kills what ran in its mount namespace and nothing
// else, though the kernel hands a freed namespace's number to the next
// namespace made: here, to a bystander that makes a mount namespace of
// its own, over and over, while servers stop.
func TestStopKillsOnlyTheServersNamespace(t *testing.T) {
	RequireSSHD(t)
	dir := t.TempDir()
	killed, err := os.Create(filepath.Join(dir, "killed"))
	if err != nil {
		t.Fatal(err)
	}
	done := filepath.Join(dir, "done")
	bystander := exec.Command("sh", "-c", `
		while [ ! -e "$1" ]; do
			unshare --mount sleep 0.02
			status=$?
			[ "$status" -eq 0 ] || echo "a bystander exited with $status"
		done`, "sh", done)
	bystander.Stdout = killed
	if err := bystander.Start(); err != nil {
		t.Fatal(err)
	}
	for range 60 {
		Start(t, Options{}).Stop()
	}
	if err := os.WriteFile(done, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := bystander.Wait(); err != nil {
		t.Fatal(err)
	}
	if out, _ := os.ReadFile(killed.Name()); len(out) > 0 {
		t.Errorf("stopping servers killed processes of other namespaces:\n%s", out)
	}
}
