package hostres

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// Import of the resources that render their files from inputs (load
// balancers, keepalived, kube-vip, etcd access, hosts entries). A rendered
// file does not give its inputs back, so an imported state holds what can
// be known honestly: the connection, the path (and block marker) of what
// was found on the host, and its digest; every input stays null. Terraform
// imports with the resource's configuration (an `import` block, or
// `terraform import` next to it), so the next plan renders the
// configuration and shows an update in place: `sha256` keeps its value
// when the host already has what the configuration renders, and changes
// when the apply will rewrite it.

// ImportDoc is the import section of these resources' descriptions.
func ImportDoc(what, id string) string {
	return "\n\n-> **Import** takes `" + id + "` (IPv6 hosts in brackets), with credentials and the host key from the " +
		"provider's `default_ssh`, and records " + what + "'s digest: a rendered file does not give back the inputs it " +
		"was rendered from, so import with the resource's full configuration (an `import` block, or `terraform import` " +
		"next to it). The next plan is an update in place that fills in the inputs; its `sha256` keeps the imported " +
		"value when the host already has what the configuration renders, in which case the apply writes and reloads " +
		"nothing, and otherwise writes the configuration's version through the same steps as any update. The imported " +
		"file was there before kha, so `on_destroy` defaults to `keep` for it: destroy leaves it. With `on_destroy = " +
		"\"restore\"`, destroy puts back the file as import found it."
}

// ImportedFile is what an imported state delivers until the first apply:
// the file (or block) it found, known by its digest. mode is the mode the
// resource gives the file, so that refresh does not report it as drift.
func ImportedFile(h *Common, path, marker string, mode uint32) Rendered {
	if marker != "" {
		return Rendered{Files: []remote.Item{remote.Block{Path: path, Marker: marker, SHA256: h.SHA256.ValueString()}}}
	}
	return Rendered{Files: []remote.Item{remote.File{Path: path, Mode: mode, SHA256: h.SHA256.ValueString()}}}
}

// ImportRendered serves ImportState of a rendering resource. The ID is
// host:port:path, or host:port:path#marker for a resource that keeps a
// marked block (withMarker; the marker defaults to defaultMarker). set
// records the path and marker in the model; the file or block must exist.
func (r *Resource[M, P]) ImportRendered(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse,
	example string, withMarker bool, defaultMarker string, set func(m *M, path, marker string)) {
	var m M
	h := P(&m).Fields()
	rest, client := r.ImportHost(ctx, req.ID, example, h, resp.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	p, marker := rest, ""
	if withMarker {
		marker = defaultMarker
		if i := strings.LastIndex(rest, "#"); i >= 0 {
			p, marker = rest[:i], rest[i+1:]
			if !MarkerPattern.MatchString(marker) {
				resp.Diagnostics.AddError("Invalid Import ID", fmt.Sprintf("%q in %q is not a block marker (letters, digits, '.', '-' or '_'), e.g. %s.",
					marker, req.ID, example))
				return
			}
		}
	}
	if !FilePathPattern.MatchString(p) {
		resp.Diagnostics.AddError("Invalid Import ID", fmt.Sprintf("%q in %q is not an absolute path to a file, e.g. %s.", p, req.ID, example))
		return
	}
	var found remote.Item = remote.File{Path: p}
	if marker != "" {
		found = remote.Block{Path: p, Marker: marker}
	}
	seen, err := client.Observe(ctx, []remote.Item{found})
	if err == nil && !seen[0].Exists {
		err = fmt.Errorf("%s has no file at %s to import", client.Address(), p)
		if marker != "" {
			err = fmt.Errorf("%s has no block \"# BEGIN kha %s\" in %s to import", client.Address(), marker, p)
		}
	}
	if err != nil {
		resp.Diagnostics.AddError("Import Failed", err.Error())
		return
	}
	set(&m, p, marker)
	h.SHA256, h.RemoteSHA256 = types.StringValue(seen[0].SHA256), types.StringValue(seen[0].SHA256)
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// splitImportID splits an import ID host:port:<rest> (IPv6 hosts in
// brackets); the port is one an SSH server can listen on.
func splitImportID(id string) (host string, port int64, rest string, err error) {
	address := AddressOfID(id)
	host, p, _ := net.SplitHostPort(address)
	rest = strings.TrimPrefix(id, address+":")
	if address == "" || rest == "" {
		return "", 0, "", fmt.Errorf("%q is not host:port:path", id)
	}
	n, err := strconv.Atoi(p)
	if err != nil || n < 1 || n > 65535 {
		return "", 0, "", fmt.Errorf("port %q in %q is not 1 to 65535: give the port the host's SSH server listens on (22 by default), as in host:port:path", p, id)
	}
	return host, int64(n), rest, nil
}

// ImportHost serves a resource's ImportState: it splits an ID
// host:port:<rest> (IPv6 hosts in brackets), fills h's id, ssh,
// keep_on_destroy and timeouts, and connects with the provider's defaults
// and the usual host key rules. example is an ID to show when the ID does
// not parse; rest is the part after host:port:.
func (r *Resource[M, P]) ImportHost(ctx context.Context, id, example string, h *Common, private privateSetter, diags *diag.Diagnostics) (rest string, client Host) {
	host, port, rest, err := splitImportID(id)
	if err != nil {
		diags.AddError("Invalid Import ID", fmt.Sprintf("%s, e.g. %s.", err, example))
		return "", nil
	}
	ssh, d := r.data.ImportedSSH(ctx, host, types.Int64Value(port))
	diags.Append(d...)
	if diags.HasError() {
		return "", nil
	}
	// The file was there before: destroy leaves it unless the
	// configuration says otherwise, and the next apply adopts it.
	h.ID, h.KeepOnDestroy, h.SSH = types.StringValue(id), types.BoolValue(false), ssh
	h.OnDestroy, h.Adopt = types.StringValue(OnDestroyKeep), types.BoolValue(false)
	h.DestroyActions = types.MapValueMust(types.StringType, map[string]attr.Value{rest: types.StringValue(OnDestroyKeep)})
	diags.Append(privateRecord{Ownership: newOwnership(true)}.write(ctx, private)...)
	h.Timeouts.Object = types.ObjectNull(objectTypes(timeoutsAttribute(ctx)))
	resolved, d := r.sshOf(ctx, h, types.StringNull())
	diags.Append(d...)
	if diags.HasError() {
		return "", nil
	}
	client, d = r.connect(ctx, resolved, ToImport)
	diags.Append(d...)
	return rest, client
}
