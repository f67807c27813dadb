package provider

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// importHost serves a resource's ImportState: it splits an ID
// host:port:<rest> (IPv6 hosts in brackets), fills h's id, ssh,
// keep_on_destroy and timeouts, and connects with the provider's defaults
// and the usual host key rules. example is an ID to show when the ID does
// not parse; rest is the part after host:port:.
func (r *hostResource[M, P]) importHost(ctx context.Context, id, example string, h *hostFields, private privateSetter, diags *diag.Diagnostics) (rest string, client *remote.Client) {
	address := addressOfID(id)
	host, port, _ := net.SplitHostPort(address)
	portNum, err := strconv.Atoi(port)
	rest = strings.TrimPrefix(id, address+":")
	if address == "" || err != nil || rest == "" {
		diags.AddError("Invalid Import ID", fmt.Sprintf("%q is not host:port:path, e.g. %s.", id, example))
		return "", nil
	}
	// The port the configuration leaves out stays out, so the plan after
	// the import does not change it.
	importedPort := types.Int64Value(int64(portNum))
	if defaults := r.data.sshDefaults(); portNum == 22 && (defaults == nil || defaults.Port.IsNull()) ||
		defaults != nil && defaults.Port.ValueInt64() == int64(portNum) {
		importedPort = types.Int64Null()
	}
	ssh, d := types.ObjectValueFrom(ctx, attributeTypes(resourceSSHAttribute()), sshModel{Host: types.StringValue(host), Port: importedPort})
	diags.Append(d...)
	if diags.HasError() {
		return "", nil
	}
	// The file was there before: destroy leaves it unless the
	// configuration says otherwise, and the next apply adopts it.
	h.ID, h.KeepOnDestroy, h.SSH = types.StringValue(id), types.BoolValue(false), ssh
	h.OnDestroy, h.Adopt = types.StringValue(onDestroyKeep), types.BoolValue(false)
	h.DestroyActions = types.MapValueMust(types.StringType, map[string]attr.Value{rest: types.StringValue(onDestroyKeep)})
	diags.Append(privateRecord{Ownership: newOwnership(true)}.write(ctx, private)...)
	h.Timeouts.Object = types.ObjectNull(attributeTypes(hostAttributes(ctx, "", "")["timeouts"]))
	resolved, d := r.sshOf(ctx, h, types.StringNull())
	diags.Append(d...)
	if diags.HasError() {
		return "", nil
	}
	client, d = r.connect(ctx, resolved, toRead)
	diags.Append(d...)
	return rest, client
}
