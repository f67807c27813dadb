package hostres

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/provider"
	providerschema "github.com/hashicorp/terraform-plugin-framework/provider/schema"
	"github.com/hashicorp/terraform-plugin-framework/providerserver"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// This file is a lab: the smallest resource the lifecycle serves
// (kha_lab), a provider that hands it the hosts of a fleet (memHost), and
// what Terraform does with it, through the framework's server as
// Terraform talks to a provider.

// labModel keeps whole files, and edits of files it does not own; it
// implements the hooks that hand a model the host.
type labModel struct {
	Common
	Files         []labFile    `tfsdk:"files"`
	RemoveCommand types.String `tfsdk:"remove_command"`
	// Address is where the hooks found the host (HostWatcher,
	// AppliedWatcher).
	Address types.String `tfsdk:"address"`
	// found is what ReadHost read of the edited files. Undoing an edit
	// puts that back: a failed apply's rollback restores what the file
	// had before it. (A destroy, which reads the host first too, leaves
	// an edit as it is: the lab keeps no record of what was there.)
	found map[string][]byte
}

type labFile struct {
	Path            types.String `tfsdk:"path"`
	Content         types.String `tfsdk:"content"`
	ValidateCommand types.String `tfsdk:"validate_command"`
	ReloadCommand   types.String `tfsdk:"reload_command"`
	// Edit: the file is not kha's; the change is made within it.
	Edit types.Bool `tfsdk:"edit"`
}

var (
	_ HostReader     = (*labModel)(nil)
	_ HostWatcher    = (*labModel)(nil)
	_ AppliedWatcher = (*labModel)(nil)
	_ DriftShower    = (*labModel)(nil)
)

func (m *labModel) Fields() *Common { return &m.Common }

// labUpgrade, when set, is how this build renders a file's content
// otherwise than the build that applied the state: an upgrade.
var labUpgrade func(content string) string

func (m *labModel) Render(*labModel) (Rendered, diag.Diagnostics) {
	out := Rendered{RemoveCommand: m.RemoveCommand.ValueString()}
	// Whole files cannot be undone: only a model of edits alone, once it
	// read the host, says how to roll back.
	var rollback []*remote.EditedFile
	undoable := m.found != nil
	for _, f := range m.Files {
		path, content := f.Path.ValueString(), f.Content.ValueString()
		if labUpgrade != nil {
			content = labUpgrade(content)
		}
		switch {
		case f.Content.IsNull(): // imported: the file found, by its digest
			return ImportedFile(&m.Common, path, "", 0), nil
		case f.Edit.ValueBool():
			edit := &remote.EditedFile{Path: path, ReloadCommand: f.ReloadCommand.ValueString(),
				Edit: contentEdit{content: []byte(content), was: m.found[path]}}
			out.Files, rollback = append(out.Files, edit), append(rollback, edit)
		default:
			undoable = false
			out.Files = append(out.Files, remote.File{Path: path, Content: []byte(content),
				ValidateCommand: f.ValidateCommand.ValueString(), ReloadCommand: f.ReloadCommand.ValueString()})
		}
	}
	if undoable {
		out.Rollback = rollback
	}
	return out, nil
}

func (m *labModel) ConflictName() string { return "kha_lab" }

func (m *labModel) PathSettings() []PathSetting { return nil }

func (m *labModel) ReadHost(ctx context.Context, h Host, _ bool) error {
	m.found = map[string][]byte{}
	for _, f := range m.Files {
		if f.Edit.ValueBool() {
			content, err := h.ReadFile(ctx, f.Path.ValueString())
			if err != nil {
				return err
			}
			m.found[f.Path.ValueString()] = content
		}
	}
	return nil
}

func (m *labModel) WatchHost(_ context.Context, h Host, _ string) diag.Diagnostics {
	m.Address = types.StringValue(h.Address())
	return nil
}

func (m *labModel) WatchApplied(_ context.Context, h Host) diag.Diagnostics {
	m.Address = types.StringNull()
	if h != nil {
		m.Address = types.StringValue(h.Address())
	}
	return nil
}

// ShowsDrift: the lab's files hold nothing secret.
func (m *labModel) ShowsDrift() bool { return true }

// contentEdit sets a file to content; its undo puts back was.
type contentEdit struct{ content, was []byte }

func (e contentEdit) Apply([]byte) ([]byte, error)         { return e.content, nil }
func (e contentEdit) Undo([]byte) ([]byte, error)          { return e.was, nil }
func (e contentEdit) State(current []byte) (string, error) { return string(current), nil }
func (e contentEdit) Want() string                         { return string(e.content) }
func (e contentEdit) Check([]byte) remote.Verifier         { return nil }

// labResource is kha_lab.
type labResource struct {
	Resource[labModel, *labModel]
}

func (r *labResource) Schema(ctx context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	file := schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
		"path":             schema.StringAttribute{Required: true},
		"content":          schema.StringAttribute{Required: true},
		"validate_command": schema.StringAttribute{Optional: true},
		"reload_command":   schema.StringAttribute{Optional: true},
		"edit":             schema.BoolAttribute{Optional: true},
	}}
	resp.Schema = schema.Schema{Version: 1, Attributes: WithHostAttributes(ctx, map[string]schema.Attribute{
		"files":          schema.ListNestedAttribute{Required: true, NestedObject: file},
		"remove_command": schema.StringAttribute{Optional: true},
		"address":        schema.StringAttribute{Computed: true},
	}, "host:port:path of the first file", "digest of the files")}
}

func (r *labResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	r.ImportRendered(ctx, req, resp, "192.0.2.10:22:/etc/lab/a.conf", false, "", func(m *labModel, path, _ string) {
		m.Files = []labFile{{Path: types.StringValue(path)}}
	})
}

// labProvider is a provider of kha_lab whose resources reach the hosts
// of a fleet, configured with the provider's default_ssh and rollout.
type labProvider struct{ fleet *fleet }

type labProviderModel struct {
	DefaultSSH types.Object `tfsdk:"default_ssh"`
	Rollout    types.Object `tfsdk:"rollout"`
}

func (p *labProvider) Metadata(_ context.Context, _ provider.MetadataRequest, resp *provider.MetadataResponse) {
	resp.TypeName = "kha"
}

func (p *labProvider) Schema(_ context.Context, _ provider.SchemaRequest, resp *provider.SchemaResponse) {
	resp.Schema = providerschema.Schema{Attributes: map[string]providerschema.Attribute{
		"default_ssh": ProviderSSHAttribute(),
		"rollout":     RolloutAttribute(),
	}}
}

func (p *labProvider) Configure(ctx context.Context, req provider.ConfigureRequest, resp *provider.ConfigureResponse) {
	var m labProviderModel
	if resp.Diagnostics.Append(req.Config.Get(ctx, &m)...); resp.Diagnostics.HasError() {
		return
	}
	data, diags := NewProviderData(ctx, nil, m.DefaultSSH, m.Rollout)
	if resp.Diagnostics.Append(diags...); diags.HasError() {
		return
	}
	data.dial = p.fleet.dial
	resp.ResourceData = data
}

func (p *labProvider) Resources(context.Context) []func() resource.Resource {
	return []func() resource.Resource{func() resource.Resource { return &labResource{Resource[labModel, *labModel]{Name: "lab"}} }}
}

func (p *labProvider) DataSources(context.Context) []func() datasource.DataSource { return nil }

// lab is a test's fleet, and Terraform running kha_lab on it.
type lab struct {
	t *testing.T
	fleet
	// provider is the provider's configuration (JSON) in every walk.
	provider string
	schema   schema.Schema
	typ      tftypes.Type
}

func newLab(t *testing.T) *lab {
	var resp resource.SchemaResponse
	(&labResource{}).Schema(context.Background(), resource.SchemaRequest{}, &resp)
	return &lab{t: t, fleet: fleet{hosts: map[string]*memHost{}}, schema: resp.Schema,
		typ:      resp.Schema.Type().TerraformType(context.Background()),
		provider: `{"default_ssh": {"password": "secret", "insecure_trust_on_first_use": true}}`}
}

// model is a state (or a plan) as kha_lab's model.
func (l *lab) model(v tftypes.Value) labModel {
	l.t.Helper()
	var m labModel
	if d := (tfsdk.State{Schema: l.schema, Raw: v}).Get(context.Background(), &m); d.HasError() {
		l.t.Fatal(d)
	}
	return m
}

// host adds a host that answers at name:22.
func (l *lab) host(name string) *memHost {
	h := newMemHost(l.t, name+":22")
	l.hosts[h.address] = h
	return h
}

// walk is one of Terraform's walks (a plan, an apply): a provider
// configured anew, with the walk's own reservations and rollout.
type walk struct {
	l *lab
	tfprotov6.ProviderServer
}

func (l *lab) walk() *walk {
	l.t.Helper()
	server, err := providerserver.NewProtocol6WithError(&labProvider{fleet: &l.fleet})()
	if err != nil {
		l.t.Fatal(err)
	}
	w := &walk{l: l, ProviderServer: server}
	schemas, err := server.GetProviderSchema(context.Background(), &tfprotov6.GetProviderSchemaRequest{})
	if err != nil {
		l.t.Fatal(err)
	}
	resp, err := server.ConfigureProvider(context.Background(), &tfprotov6.ConfigureProviderRequest{
		TerraformVersion: "1.11.4", Config: w.dynamic(w.value(schemas.Provider.ValueType(), l.provider))})
	if err != nil {
		l.t.Fatal(err)
	}
	noErrors(l.t, resp.Diagnostics)
	return w
}

// instance is one resource instance as Terraform keeps it: its state
// and private data (null and none before a create).
type instance struct {
	state   tftypes.Value
	private []byte
}

func (l *lab) instance() *instance { return &instance{state: tftypes.NewValue(l.typ, nil)} }

// labConfig is a kha_lab configuration. Its ssh is on(host) but where a
// test says otherwise: the credentials and the host key (trust on first
// use) come from default_ssh, as newLab configures it.
type labConfig struct {
	SSH           map[string]string `json:"-"`
	Files         []labFileConfig   `json:"files"`
	RemoveCommand string            `json:"remove_command,omitempty"`
	OnDestroy     string            `json:"on_destroy,omitempty"`
	Adopt         bool              `json:"adopt,omitempty"`
}

// on is the ssh of a resource on host.
func on(host string) map[string]string { return map[string]string{"host": host} }

type labFileConfig struct {
	Path            string `json:"path"`
	Content         string `json:"content"`
	ValidateCommand string `json:"validate_command,omitempty"`
	ReloadCommand   string `json:"reload_command,omitempty"`
	Edit            bool   `json:"edit,omitempty"`
}

func (c labConfig) value(w *walk) tftypes.Value {
	raw, err := json.Marshal(c)
	if err != nil {
		w.l.t.Fatal(err)
	}
	config := w.value(w.l.typ, string(raw))
	var attrs map[string]tftypes.Value
	if err := config.As(&attrs); err != nil {
		w.l.t.Fatal(err)
	}
	ssh, err := json.Marshal(c.SSH)
	if err != nil {
		w.l.t.Fatal(err)
	}
	attrs["ssh"] = w.value(attrs["ssh"].Type(), string(ssh))
	return tftypes.NewValue(w.l.typ, attrs)
}

// value is a value of typ from JSON, absent attributes null.
func (w *walk) value(typ tftypes.Type, text string) tftypes.Value {
	w.l.t.Helper()
	v, err := (&tfprotov6.DynamicValue{JSON: []byte(text)}).Unmarshal(typ)
	if err != nil {
		w.l.t.Fatal(err)
	}
	return v
}

func (w *walk) dynamic(v tftypes.Value) *tfprotov6.DynamicValue {
	w.l.t.Helper()
	d, err := tfprotov6.NewDynamicValue(v.Type(), v)
	if err != nil {
		w.l.t.Fatal(err)
	}
	return &d
}

func (w *walk) state(d *tfprotov6.DynamicValue) tftypes.Value {
	w.l.t.Helper()
	v, err := d.Unmarshal(w.l.typ)
	if err != nil {
		w.l.t.Fatal(err)
	}
	return v
}

// planned is a plan of one instance.
type planned struct {
	state   tftypes.Value
	private []byte
	diags   diagnostics
	replace bool
}

// plan validates config and plans the instance to it (nil: destroy),
// proposing what Terraform proposes: the configuration, and the prior
// state's value of each computed attribute the configuration leaves null.
func (w *walk) plan(in *instance, config *labConfig) planned {
	w.l.t.Helper()
	proposed, cfg := tftypes.NewValue(w.l.typ, nil), tftypes.NewValue(w.l.typ, nil)
	if config != nil {
		cfg = config.value(w)
		resp, err := w.ValidateResourceConfig(context.Background(), &tfprotov6.ValidateResourceConfigRequest{TypeName: "kha_lab",
			Config: w.dynamic(cfg), ClientCapabilities: &tfprotov6.ValidateResourceConfigClientCapabilities{WriteOnlyAttributesAllowed: true}})
		if err != nil {
			w.l.t.Fatal(err)
		}
		if diags := diagnostics(resp.Diagnostics); diags.hasError() {
			return planned{diags: diags}
		}
		var attrs, prior map[string]tftypes.Value
		if err := cfg.As(&attrs); err != nil {
			w.l.t.Fatal(err)
		}
		if !in.state.IsNull() {
			if err := in.state.As(&prior); err != nil {
				w.l.t.Fatal(err)
			}
		}
		for name, v := range attrs {
			if w.l.schema.Attributes[name].IsComputed() && v.IsNull() && prior != nil {
				attrs[name] = prior[name]
			}
		}
		proposed = tftypes.NewValue(w.l.typ, attrs)
	}
	resp, err := w.PlanResourceChange(context.Background(), &tfprotov6.PlanResourceChangeRequest{TypeName: "kha_lab",
		PriorState: w.dynamic(in.state), ProposedNewState: w.dynamic(proposed), Config: w.dynamic(cfg), PriorPrivate: in.private})
	if err != nil {
		w.l.t.Fatal(err)
	}
	p := planned{state: tftypes.NewValue(w.l.typ, nil), private: resp.PlannedPrivate, diags: resp.Diagnostics,
		replace: len(resp.RequiresReplace) > 0}
	if resp.PlannedState != nil {
		p.state = w.state(resp.PlannedState)
	}
	return p
}

// apply applies a plan of the instance, keeping the state and private
// data it answers with, as Terraform does after a failure too.
func (w *walk) apply(in *instance, config *labConfig, p planned) diagnostics {
	w.l.t.Helper()
	cfg := tftypes.NewValue(w.l.typ, nil)
	if config != nil {
		cfg = config.value(w)
	}
	resp, err := w.ApplyResourceChange(context.Background(), &tfprotov6.ApplyResourceChangeRequest{TypeName: "kha_lab",
		PriorState: w.dynamic(in.state), PlannedState: w.dynamic(p.state), Config: w.dynamic(cfg), PlannedPrivate: p.private})
	if err != nil {
		w.l.t.Fatal(err)
	}
	in.state, in.private = w.state(resp.NewState), resp.Private
	return resp.Diagnostics
}

// refresh reads the instance.
func (w *walk) refresh(in *instance) diagnostics {
	w.l.t.Helper()
	resp, err := w.ReadResource(context.Background(), &tfprotov6.ReadResourceRequest{TypeName: "kha_lab",
		CurrentState: w.dynamic(in.state), Private: in.private})
	if err != nil {
		w.l.t.Fatal(err)
	}
	in.state, in.private = w.state(resp.NewState), resp.Private
	return resp.Diagnostics
}

// importID imports id and reads what it imported, as terraform import
// does.
func (w *walk) importID(id string) (*instance, diagnostics) {
	w.l.t.Helper()
	resp, err := w.ImportResourceState(context.Background(), &tfprotov6.ImportResourceStateRequest{TypeName: "kha_lab", ID: id})
	if err != nil {
		w.l.t.Fatal(err)
	}
	if len(resp.ImportedResources) != 1 {
		return nil, resp.Diagnostics
	}
	imported := resp.ImportedResources[0]
	in := &instance{state: w.state(imported.State), private: imported.Private}
	return in, append(resp.Diagnostics, w.refresh(in)...)
}

// apply runs terraform apply of the instance to config (nil: destroy):
// a refresh of what it has, a plan, and the apply of that plan in a walk
// of its own. It fails the test where the plan does.
func (l *lab) apply(in *instance, config *labConfig) diagnostics {
	l.t.Helper()
	w := l.walk()
	var diags diagnostics
	if !in.state.IsNull() {
		diags = w.refresh(in)
	}
	p := w.plan(in, config)
	noErrors(l.t, p.diags)
	return append(append(diags, p.diags...), l.walk().apply(in, config, p)...)
}

// diagnostics are a response's.
type diagnostics []*tfprotov6.Diagnostic

// find is the first diagnostic of severity whose summary starts with
// summary; nil when there is none.
func (ds diagnostics) find(severity tfprotov6.DiagnosticSeverity, summary string) *tfprotov6.Diagnostic {
	for _, d := range ds {
		if d.Severity == severity && strings.HasPrefix(d.Summary, summary) {
			return d
		}
	}
	return nil
}

func (ds diagnostics) String() string {
	var b strings.Builder
	for _, d := range ds {
		b.WriteString("\n" + d.Severity.String() + ": " + d.Summary + ": " + d.Detail)
	}
	return b.String()
}

func (ds diagnostics) hasError() bool { return ds.find(tfprotov6.DiagnosticSeverityError, "") != nil }

func noErrors(t *testing.T, ds diagnostics) {
	t.Helper()
	if ds.hasError() {
		t.Fatalf("unexpected error:%s", ds)
	}
}

// recordOf is the lifecycle's private record of an instance.
func recordOf(t *testing.T, in *instance) privateRecord {
	t.Helper()
	var keys map[string][]byte
	var rec privateRecord
	if err := json.Unmarshal(in.private, &keys); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(keys[privateRecordKey], &rec); err != nil {
		t.Fatal(err)
	}
	return rec
}
