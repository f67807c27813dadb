package hostres

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

func TestDestroyActions(t *testing.T) {
	t.Parallel()
	items := []remote.Item{
		remote.File{Path: "/etc/haproxy/haproxy.cfg"},
		remote.File{Path: "/etc/kha/check.sh"},
		remote.Block{Path: "/etc/hosts", Marker: "api"},
		&remote.EditedFile{Path: "/etc/kubernetes/kubelet.conf"},
	}
	saved := ownership{ID: "x", Saved: map[string]bool{"/etc/haproxy/haproxy.cfg": true, "/etc/kha/check.sh": false}}
	fromBefore := ownership{} // a resource applied before records: its files are its own
	for _, tc := range []struct {
		name        string
		onDestroy   string
		keep        bool
		own         ownership
		hasPrior    bool
		complete    bool
		want        map[string]string // nil: unknown
		wantUnknown bool
	}{
		{name: "restore", onDestroy: "restore", own: saved, hasPrior: true, want: map[string]string{
			"/etc/haproxy/haproxy.cfg": "restore", "/etc/kha/check.sh": "delete", "/etc/hosts#api": "remove block",
			"/etc/kubernetes/kubelet.conf": "undo edit"}},
		{name: "delete", onDestroy: "delete", own: saved, want: map[string]string{
			"/etc/haproxy/haproxy.cfg": "delete", "/etc/kha/check.sh": "delete", "/etc/hosts#api": "remove block",
			"/etc/kubernetes/kubelet.conf": "undo edit"}},
		{name: "keep", onDestroy: "keep", want: map[string]string{
			"/etc/haproxy/haproxy.cfg": "keep", "/etc/kha/check.sh": "keep", "/etc/hosts#api": "keep", "/etc/kubernetes/kubelet.conf": "keep"}},
		{name: "keep_on_destroy", onDestroy: "restore", keep: true, want: map[string]string{
			"/etc/haproxy/haproxy.cfg": "keep", "/etc/kha/check.sh": "keep", "/etc/hosts#api": "keep", "/etc/kubernetes/kubelet.conf": "keep"}},
		{name: "a create does not know yet", onDestroy: "restore", wantUnknown: true},
		{name: "a create that failed counts what it did not save as its own", onDestroy: "restore", complete: true, want: map[string]string{
			"/etc/haproxy/haproxy.cfg": "delete", "/etc/kha/check.sh": "delete", "/etc/hosts#api": "remove block",
			"/etc/kubernetes/kubelet.conf": "undo edit"}},
		{name: "from before records", onDestroy: "restore", own: fromBefore, hasPrior: true, want: map[string]string{
			"/etc/haproxy/haproxy.cfg": "delete", "/etc/kha/check.sh": "delete", "/etc/hosts#api": "remove block",
			"/etc/kubernetes/kubelet.conf": "undo edit"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := &Common{OnDestroy: types.StringValue(tc.onDestroy), KeepOnDestroy: types.BoolValue(tc.keep)}
			got := DestroyActions(items, h, func(p string) (bool, bool) { return tc.own.savedKnown(p, tc.hasPrior) }, tc.complete)
			if tc.wantUnknown {
				if !got.IsUnknown() {
					t.Fatalf("got %v, want unknown", got)
				}
				return
			}
			var actions map[string]string
			if d := got.ElementsAs(t.Context(), &actions, false); d.HasError() {
				t.Fatal(d)
			}
			if len(actions) != len(tc.want) {
				t.Fatalf("got %v, want %v", actions, tc.want)
			}
			for k, v := range tc.want {
				if actions[k] != v {
					t.Fatalf("%s: got %q, want %q (all: %v)", k, actions[k], v, actions)
				}
			}
		})
	}
}

func TestOnDestroyOf(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		config, prior types.String
		want          string
	}{
		{types.StringNull(), types.StringNull(), "restore"},
		{types.StringNull(), types.StringValue("keep"), "keep"}, // an import's, kept while the configuration says nothing
		{types.StringValue("delete"), types.StringValue("keep"), "delete"},
		{types.StringNull(), types.StringUnknown(), "restore"},
	} {
		if got := onDestroyOf(tc.config, tc.prior).ValueString(); got != tc.want {
			t.Errorf("onDestroyOf(%v, %v) = %q, want %q", tc.config, tc.prior, got, tc.want)
		}
	}
}

func TestOwnershipRecordsSavedFilesForGood(t *testing.T) {
	t.Parallel()
	own := ownership{ID: "x"}
	files := []remote.Item{remote.File{Path: "/a"}, remote.Block{Path: "/etc/hosts", Marker: "m"}, remote.File{Path: "/b"}}
	own.record(files, []remote.Outcome{{Saved: true}, {}, {Saved: false}})
	own.record(files[:1], []remote.Outcome{{Saved: false}}) // a record lost on the host later
	if !own.Saved["/a"] || own.Saved["/b"] || len(own.Saved) != 2 {
		t.Fatalf("saved %v", own.Saved)
	}
}
