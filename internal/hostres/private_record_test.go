package hostres

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// privateMap holds private state as the framework does for one resource:
// bytes by key, a nil or empty value removing the key.
type privateMap map[string][]byte

func (p privateMap) GetKey(_ context.Context, key string) ([]byte, diag.Diagnostics) {
	return p[key], nil
}

func (p privateMap) SetKey(_ context.Context, key string, value []byte) diag.Diagnostics {
	if len(value) == 0 {
		delete(p, key)
	} else {
		p[key] = value
	}
	return nil
}

// TestPrivateRecord_upgradesLegacyKeys: a state written by a release
// before the record keeps five keys; the record reads them all, and its
// first write leaves the record alone under its key.
func TestPrivateRecord_upgradesLegacyKeys(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	// As the earlier releases wrote them: the claim and the drift as JSON,
	// "true" or "false", the unreachable host's reason as a JSON string,
	// the pending handover as JSON.
	private := privateMap{
		"ownership":   []byte(`{"id":"0123abcd","saved":{"/etc/haproxy/haproxy.cfg":true},"created":{"/etc/hosts":true},"imported":true}`),
		"unobserved":  []byte("true"),
		"drift":       []byte(`["/etc/haproxy/haproxy.cfg: content changed"]`),
		"unreachable": []byte(`"10.0.0.21:22: no answer"`),
		"handover":    []byte(`{"previous":["10.0.0.100:8443"],"interim":"abc"}`),
	}
	rec, diags := readPrivateRecord(ctx, private)
	if diags.HasError() {
		t.Fatal(diags)
	}
	want := privateRecord{
		Ownership: ownership{ID: "0123abcd", Saved: map[string]bool{"/etc/haproxy/haproxy.cfg": true},
			Created: map[string]bool{"/etc/hosts": true}, Imported: true},
		Unobserved:  true,
		Drift:       []string{"/etc/haproxy/haproxy.cfg: content changed"},
		Unreachable: "10.0.0.21:22: no answer",
		Handover:    &pendingHandover{Previous: []string{"10.0.0.100:8443"}, Interim: "abc"},
	}
	if !reflect.DeepEqual(rec, want) {
		t.Fatalf("read %+v\nwant %+v", rec, want)
	}
	if diags := rec.write(ctx, private); diags.HasError() {
		t.Fatal(diags)
	}
	if len(private) != 1 || private[privateRecordKey] == nil {
		t.Fatalf("after the write, private state has %d keys, want only %q: %q", len(private), privateRecordKey, private)
	}
	again, diags := readPrivateRecord(ctx, private)
	want.Version = privateRecordVersion
	if diags.HasError() || !reflect.DeepEqual(again, want) {
		t.Fatalf("read back %+v (%v)\nwant %+v", again, diags, want)
	}
}

// TestPrivateRecord_empty: a new resource, or one from before claims,
// has an empty record and no error.
func TestPrivateRecord_empty(t *testing.T) {
	t.Parallel()
	rec, diags := readPrivateRecord(context.Background(), privateMap{})
	if diags.HasError() || !reflect.DeepEqual(rec, privateRecord{}) {
		t.Fatalf("got %+v, %v", rec, diags)
	}
}

// TestPrivateRecord_refuses: a record this release cannot read is an
// error that says what to do, never a record read half.
func TestPrivateRecord_refuses(t *testing.T) {
	t.Parallel()
	for name, c := range map[string]struct {
		private privateMap
		want    string
	}{
		"newer layout": {privateMap{privateRecordKey: []byte(`{"version":2,"unobserved":true}`)},
			"layout 2; this release of kha reads up to 1"},
		"not JSON":      {privateMap{privateRecordKey: []byte(`{`)}, "decoding what kha keeps"},
		"legacy broken": {privateMap{"drift": []byte(`"not a list"`)}, `decoding "drift"`},
	} {
		_, diags := readPrivateRecord(context.Background(), c.private)
		if !diags.HasError() || !strings.Contains(Summary(diags), c.want) {
			t.Errorf("%s: got %v, want an error with %q", name, diags, c.want)
		}
	}
}
