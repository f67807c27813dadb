package remote

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

// failingVerifier fails every verification.
type failingVerifier struct{}

func (failingVerifier) Verify(context.Context, *Client) error {
	return errors.New("the final configuration serves nothing")
}

// TestHandoverEndsOnlyAPendingInterim puts a handover's final
// configuration in place on a real host: only over the interim
// configuration it was recorded with, through validate, reload and
// verify, and with the interim one back on any failure.
func TestHandoverEndsOnlyAPendingInterim(t *testing.T) {
	s := testhost.Start(t, testhost.Options{})
	c, _ := client(t, configFor(s))
	ctx := context.Background()
	dir := t.TempDir()
	target := filepath.Join(dir, "haproxy.cfg")
	reloads := filepath.Join(dir, "reloads")
	const interim, final = "bind :8443\nbind :9443\n", "bind :9443\n"
	owner := &Claim{ID: "lb", Capture: true}
	// start puts the interim configuration in place as its resource
	// does, with the record of the final one.
	start := func(t *testing.T, validate string) Handover {
		t.Helper()
		if _, err := c.Put(ctx, File{Path: target, Content: []byte(interim), Mode: 0o640, Claim: owner}); err != nil {
			t.Fatal(err)
		}
		record := HandoverRecord{Path: target, At: target, Claim: "lb", InterimSHA256: SHA256([]byte(interim)), Final: final,
			ValidateCommand: validate, ReloadCommand: "echo reloaded >> " + reloads, Previous: []string{"0.0.0.0:8443"},
			Verification: json.RawMessage(`"fail"`)}
		if err := c.PutHandoverRecord(ctx, target, record); err != nil {
			t.Fatal(err)
		}
		return Handover{Path: target, Seal: record.Seal()}
	}
	recordLeft := func() bool { _, err := os.Stat(HandoverRecordPath(target)); return err == nil }

	t.Run("pending, then ended", func(t *testing.T) {
		h := start(t, "grep -q 9443 %s")
		if o := observe(t, c, h); !strings.Contains(h.Drift(o), `still serves "0.0.0.0:8443"`) {
			t.Fatalf("a pending handover is not drift: %+v", o)
		}
		if _, err := c.Put(ctx, h); err != nil {
			t.Fatal(err)
		}
		if got := string(mustRead(t, target)); got != final || recordLeft() {
			t.Fatalf("after the handover: %q, record left %v", got, recordLeft())
		}
		if info, err := os.Stat(target); err != nil || info.Mode().Perm() != 0o640 {
			t.Fatalf("the final configuration does not keep the interim one's mode: %v %v", info.Mode(), err)
		}
		if got := string(mustRead(t, reloads)); got != "reloaded\n" {
			t.Fatalf("reloads: %q", got)
		}
		if o := observe(t, c, h); h.Drift(o) != "" {
			t.Fatalf("drift after the handover: %q", h.Drift(o))
		}
		if out, err := c.Put(ctx, h); err != nil || !out.Unchanged {
			t.Fatalf("a second handover: %+v, %v", out, err)
		}
	})
	t.Run("previous places a host edited", func(t *testing.T) {
		h := start(t, "")
		forged := HandoverRecord{Path: target, At: target, Claim: "lb", InterimSHA256: SHA256([]byte(interim)), Final: final,
			Previous: []string{"10.0.0.1:8443\nError: forged by the host", "10.0.0.2:8443"}}
		if err := c.PutHandoverRecord(ctx, target, forged); err != nil {
			t.Fatal(err)
		}
		drift := h.Drift(observe(t, c, h))
		if strings.Contains(drift, "\n") || !strings.Contains(drift, `"10.0.0.1:8443\nError: forged by the host", "10.0.0.2:8443"`) {
			t.Fatalf("a previous place the host wrote is not quoted on one line: %q", drift)
		}
	})
	t.Run("a final configuration the validate command refuses", func(t *testing.T) {
		h := start(t, "false")
		if _, err := c.Put(ctx, h); err == nil || !strings.Contains(err.Error(), "validate") {
			t.Fatalf("want the validate command's failure, got %v", err)
		}
		if got := string(mustRead(t, target)); got != interim || !recordLeft() {
			t.Fatalf("after a refused final configuration: %q, record left %v", got, recordLeft())
		}
	})
	t.Run("a final configuration that fails its verification", func(t *testing.T) {
		h := start(t, "")
		h.Verifier = func(raw json.RawMessage) (Verifier, error) { return failingVerifier{}, nil }
		if _, err := c.Put(ctx, h); err == nil || !strings.Contains(err.Error(), "serves nothing") {
			t.Fatalf("want the verification's failure, got %v", err)
		}
		if got := string(mustRead(t, target)); got != interim || !recordLeft() {
			t.Fatalf("after a failed verification: %q, record left %v", got, recordLeft())
		}
	})
	t.Run("changed since by its resource", func(t *testing.T) {
		h := start(t, "")
		if err := os.WriteFile(target, []byte("bind :7000\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Put(ctx, h); err != nil {
			t.Fatal(err)
		}
		if got := string(mustRead(t, target)); got != "bind :7000\n" || recordLeft() {
			t.Fatalf("a changed configuration: %q, record left %v", got, recordLeft())
		}
	})
	t.Run("the final configuration in place already", func(t *testing.T) {
		h := start(t, "")
		if err := os.WriteFile(target, []byte(final), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Put(ctx, h); err != nil || recordLeft() {
			t.Fatalf("record left %v: %v", recordLeft(), err)
		}
	})
	t.Run("a record Terraform did not plan", func(t *testing.T) {
		h := start(t, "")
		h.Seal = HandoverRecord{Path: target, At: target, Final: final}.Seal()
		os.Remove(reloads)
		if _, err := c.Put(ctx, h); !errors.Is(err, ErrUnsealed) || !strings.Contains(err.Error(), "handover_sha256") {
			t.Fatalf("want the record refused, got %v", err)
		}
		_, reloaded := os.Stat(reloads)
		if got := string(mustRead(t, target)); got != interim || !recordLeft() || reloaded == nil {
			t.Fatalf("after a record Terraform did not plan: %q, record left %v, reloaded %v", got, recordLeft(), reloaded == nil)
		}
	})
	t.Run("another owner's claim", func(t *testing.T) {
		h := start(t, "")
		other := HandoverRecord{Path: target, At: target, Claim: "someone else", InterimSHA256: SHA256([]byte(interim)), Final: final}
		if err := c.PutHandoverRecord(ctx, target, other); err != nil {
			t.Fatal(err)
		}
		h.Seal = other.Seal()
		if _, err := c.Put(ctx, h); err == nil || !strings.Contains(err.Error(), "another kha resource") {
			t.Fatalf("want the claim refused, got %v", err)
		}
		if got := string(mustRead(t, target)); got != interim {
			t.Fatalf("another owner's configuration changed: %q", got)
		}
	})
}
