package hostres

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/kha/terraform-provider-kha/internal/remote"
)

// settingsOf are the path settings of a model with the string
// attributes given, and a list of strings "paths".
func settingsOf(attrs map[string]string, paths ...string) []PathSetting {
	var settings []PathSetting
	for name, v := range attrs {
		settings = append(settings, PathSetting{path.Root(name), types.StringValue(v)})
	}
	for i, p := range paths {
		settings = append(settings, PathSetting{path.Root("paths").AtListIndex(i), types.StringValue(p)})
	}
	return settings
}

// testReserver is a model for the registry: a name, files and a digest.
type testReserver struct {
	name  string
	files []remote.Item
	host  string
	port  int
}

func (c testReserver) ConflictName() string { return c.name }

// PathSettings: an attribute "path" sets its first file's path.
func (c testReserver) PathSettings() []PathSetting {
	if len(c.files) == 0 {
		return nil
	}
	p, _ := c.files[0].Place()
	return settingsOf(map[string]string{"path": p})
}

// placedReserver is a testReserver with the path settings given.
type placedReserver struct {
	testReserver
	settings []PathSetting
}

func (c placedReserver) PathSettings() []PathSetting { return c.settings }

func (c testReserver) take(d *ProviderData) diag.Diagnostics {
	m := ResolvedSSH{Config: remote.Config{Host: c.host, Port: c.port}}
	return d.reserve(m, c, DesiredDigest(c.files), c.files)
}

func file(p, content string) remote.Item { return remote.File{Path: p, Content: []byte(content)} }

// edited is a file kha edits, such as a kubeconfig whose server
// kha_kubeconfig_server sets.
func edited(p string) remote.Item {
	return &remote.EditedFile{Path: p, Edit: serverEdit("https://127.0.0.1:6443")}
}

// serverEdit sets a server; a reservation sees only its path and what it
// wants, so it never runs.
type serverEdit string

func (e serverEdit) Apply(current []byte) ([]byte, error) { return current, nil }
func (e serverEdit) Undo(current []byte) ([]byte, error)  { return current, nil }
func (e serverEdit) State([]byte) (string, error)         { return string(e), nil }
func (e serverEdit) Want() string                         { return string(e) }
func (e serverEdit) Check([]byte) remote.Verifier         { return nil }

// hostsBlock is a block of /etc/hosts.
func hostsBlock(marker, content string) remote.Item {
	return remote.Block{Path: "/etc/hosts", Marker: marker, Content: []byte(content)}
}

func TestReservations_conflicts(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name         string
		first, later testReserver
		want         string // "" for none
	}{
		{"two whole files", testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "10.0.0.21", 22},
			testReserver{"b", []remote.Item{file("/etc/haproxy/haproxy.cfg", "b")}, "10.0.0.21", 22},
			"File Managed by Two Resources: This b and a (id 10.0.0.21:22:/etc/haproxy/haproxy.cfg) both manage 10.0.0.21:22:/etc/haproxy/haproxy.cfg"},
		{"blocks of one marker", testReserver{"a", []remote.Item{hostsBlock("entries", "1.1.1.1 a")}, "h", 22},
			testReserver{"b", []remote.Item{hostsBlock("entries", "2.2.2.2 b")}, "h", 22},
			`Block Managed by Two Resources: This b and a (id h:22:/etc/hosts) both manage the block "entries"`},
		{"a block under a whole file", testReserver{"a", []remote.Item{file("/etc/hosts", "x")}, "h", 22},
			testReserver{"b", []remote.Item{hostsBlock("entries", "2.2.2.2 b")}, "h", 22},
			`File Managed by Two Resources: This b (its block "entries") and a (id h:22:/etc/hosts; the whole file) both manage h:22:/etc/hosts`},
		{"a whole file over a block", testReserver{"a", []remote.Item{hostsBlock("entries", "2.2.2.2 b")}, "h", 22},
			testReserver{"b", []remote.Item{file("/etc/hosts", "x")}, "h", 22},
			`File Managed by Two Resources: This b (the whole file) and a (id h:22:/etc/hosts; its block "entries") both manage h:22:/etc/hosts`},
		{"an edited file under a whole file", testReserver{"a", []remote.Item{file("/etc/kubernetes/kubelet.conf", "x")}, "h", 22},
			testReserver{"b", []remote.Item{edited("/etc/kubernetes/kubelet.conf")}, "h", 22},
			"This b and a (id h:22:/etc/kubernetes/kubelet.conf) both manage h:22:/etc/kubernetes/kubelet.conf"},
		{"blocks of two markers", testReserver{"a", []remote.Item{hostsBlock("api", "1.1.1.1 a")}, "h", 22},
			testReserver{"b", []remote.Item{hostsBlock("registry", "2.2.2.2 b")}, "h", 22}, ""},
		{"two hosts", testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "10.0.0.21", 22},
			testReserver{"b", []remote.Item{file("/etc/haproxy/haproxy.cfg", "b")}, "10.0.0.22", 22}, ""},
		{"two ports", testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "h", 22},
			testReserver{"b", []remote.Item{file("/etc/haproxy/haproxy.cfg", "b")}, "h", 2222}, ""},
		{"two paths", testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "h", 22},
			testReserver{"b", []remote.Item{file("/etc/kha/external-proxy.cfg", "b")}, "h", 22}, ""},
		{"one resource planned twice", testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "h", 22},
			testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "h", 22}, ""},
		{"one type, another content", testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "a")}, "h", 22},
			testReserver{"a", []remote.Item{file("/etc/haproxy/haproxy.cfg", "changed")}, "h", 22}, "This a and another a (id h:22:/etc/haproxy/haproxy.cfg) both manage"},
		{"one host in two spellings", testReserver{"a", []remote.Item{file("/etc/x", "a")}, "Node1.Example.com", 22},
			testReserver{"b", []remote.Item{file("/etc/x", "b")}, "node1.example.com", 0}, "both manage node1.example.com:22:/etc/x"},
		{"one IPv6 address in two spellings", testReserver{"a", []remote.Item{file("/etc/x", "a")}, "2001:db8:0::1", 22},
			testReserver{"b", []remote.Item{file("/etc/x", "b")}, "2001:DB8::1", 22}, "both manage [2001:DB8::1]:22:/etc/x"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := &ProviderData{reservations: newReservations()}
			if diags := c.first.take(d); diags.HasError() {
				t.Fatalf("first claim: %v", diags)
			}
			diags := c.later.take(d)
			got := ""
			if diags.HasError() {
				got = diags.Errors()[0].Summary() + ": " + diags.Errors()[0].Detail()
			}
			if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
				t.Errorf("second claim: got %q, want %q", got, c.want)
			}
		})
	}
}

// TestReservations_bastion: one private address behind two bastions is two
// machines; behind one, one.
func TestReservations_bastion(t *testing.T) {
	t.Parallel()
	d := &ProviderData{reservations: newReservations()}
	behind := func(bastion string) ResolvedSSH {
		return ResolvedSSH{Config: remote.Config{Host: "10.0.0.5", Bastion: &remote.Config{Host: bastion}}}
	}
	f := []remote.Item{file("/etc/x", "a")}
	for i, c := range []struct {
		m       ResolvedSSH
		name    string
		wantErr bool
	}{{behind("bastion-a"), "a", false}, {behind("bastion-b"), "b", false}, {behind("bastion-a"), "c", true},
		{ResolvedSSH{Config: remote.Config{Host: "10.0.0.5"}}, "d", false},
		{ResolvedSSH{Config: remote.Config{Host: "10.0.0.5"}, Unknown: []string{"bastion_host"}}, "e", false}} {
		got := d.reserve(c.m, placedReserver{testReserver{name: c.name}, settingsOf(map[string]string{"path": "/etc/x"})}, fmt.Sprint(i), f).HasError()
		if got != c.wantErr {
			t.Errorf("reservation %s: error %v, want %v", c.name, got, c.wantErr)
		}
	}
}

// TestReservations_detail: a third reserver names both before it, in order; the
// error is at the attribute that sets the path, with the fix of each.
func TestReservations_detail(t *testing.T) {
	t.Parallel()
	d := &ProviderData{reservations: newReservations()}
	m := ResolvedSSH{Config: remote.Config{Host: "10.0.0.21"}}
	take := func(name, digest string, settings []PathSetting, files ...remote.Item) diag.Diagnostics {
		return d.reserve(m, placedReserver{testReserver{name: name}, settings}, digest, files)
	}
	take("kha_file with path = \"/etc/hosts\"", "1", settingsOf(map[string]string{"path": "/etc/hosts"}), file("/etc/hosts", "x"))
	take("z_hosts", "2", settingsOf(map[string]string{"path": "/etc/hosts"}), hostsBlock("entries", "x"))
	diags := take("a_edit", "3", settingsOf(nil, "/etc/kubernetes/admin.conf", "/etc/hosts"),
		edited("/etc/kubernetes/admin.conf"), edited("/etc/hosts"))
	if len(diags) != 1 {
		t.Fatalf("got %d diagnostics, want 1: %v", len(diags), diags)
	}
	e, ok := diags[0].(diag.DiagnosticWithPath)
	if !ok || e.Path().String() != "paths[1]" {
		t.Errorf("diagnostic %v is not at paths[1]", diags[0])
	}
	want := `This a_edit (the whole file) and kha_file with path = "/etc/hosts" (id 10.0.0.21:22:/etc/hosts; the whole file) and ` +
		`z_hosts (id 10.0.0.21:22:/etc/hosts; its block "entries") ` +
		"both manage 10.0.0.21:22:/etc/hosts. Writing the whole file drops the block, and putting the block back changes the file: " +
		"every apply undoes the other, and every later plan changes it back.\n\n" +
		"Give the file to one of them: on this resource, set `paths[1]` to another file; or on kha_file with path = \"/etc/hosts\", " +
		"set `path` to another file; or on z_hosts, set `path` to another file. A resource already applied is found by its id: " +
		"terraform state list -id=<id> (OpenTofu: tofu state list -id=<id>)."
	if got := diags[0].Detail(); got != want {
		t.Errorf("detail:\n%s\nwant:\n%s", got, want)
	}
}

// TestReservations_parallel: of many resources claiming one file at once,
// exactly one wins.
func TestReservations_parallel(t *testing.T) {
	t.Parallel()
	d := &ProviderData{reservations: newReservations()}
	var wg sync.WaitGroup
	var mu sync.Mutex
	won := 0
	for i := range 64 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := testReserver{fmt.Sprintf("r%d", i), []remote.Item{file("/etc/x", fmt.Sprint(i))}, "h", 22}
			if !c.take(d).HasError() {
				mu.Lock()
				won++
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if won != 1 {
		t.Errorf("%d reservations won, want 1", won)
	}
}
