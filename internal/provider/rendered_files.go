package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/booldefault"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// renderedFields are the attributes of every resource that renders files
// at plan time and, given `ssh`, keeps them on a host.
type renderedFields struct {
	deliveredFields
	DestroyCommand types.String `tfsdk:"destroy_command"`
}

func (f *renderedFields) rendered() *renderedFields { return f }

// renderedModel is a resource model that embeds renderedFields.
type renderedModel interface {
	rendered() *renderedFields
}

// renderer is what each such resource contributes.
type renderer interface {
	newModel() renderedModel
	// files renders the plan's files, filling its computed attributes;
	// config is the configuration (or the state, when re-rendering it).
	files(plan, config renderedModel) ([]remote.File, diag.Diagnostics)
}

// renderedFilesResource is the lifecycle those resources share: render at
// plan time, deliver over SSH when `ssh` is set, observe drift, remove.
type renderedFilesResource struct {
	hostFiles
	renderer renderer
}

func (r *renderedFilesResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.configure(req, resp)
}

// renderedAttributes are the schema of renderedFields.
func renderedAttributes(destroyDescription string) map[string]schema.Attribute {
	return map[string]schema.Attribute{
		"id": schema.StringAttribute{Computed: true,
			MarkdownDescription: "`host:port:path` of the first file when delivered over SSH, else the rendered digest."},
		"destroy_command": schema.StringAttribute{Optional: true, Computed: true, MarkdownDescription: destroyDescription},
		"keep_on_destroy": schema.BoolAttribute{Optional: true, Computed: true, Default: booldefault.StaticBool(false),
			MarkdownDescription: "Leave the files on the host on destroy. Default `false`."},
		"ssh":    resourceConnectionAttribute(),
		"sha256": schema.StringAttribute{Computed: true, MarkdownDescription: "Digest of the files to deliver, known at plan time."},
		"remote_sha256": schema.StringAttribute{Computed: true,
			MarkdownDescription: "Digest of the files as last seen on the host; differs from `sha256` after an edit outside Terraform. Null without `ssh`."},
		"trusted_host_key": schema.StringAttribute{Computed: true,
			MarkdownDescription: "With `ssh.insecure_trust_on_first_use`, the host key seen at the first connection."},
	}
}

func (r *renderedFilesResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.Plan.Raw.IsNull() {
		return
	}
	planModel, configModel := r.renderer.newModel(), r.renderer.newModel()
	resp.Diagnostics.Append(req.Plan.Get(ctx, planModel)...)
	if !req.Config.Raw.IsFullyKnown() || resp.Diagnostics.HasError() {
		return // computed values stay unknown until the inputs are known
	}
	resp.Diagnostics.Append(req.Config.Get(ctx, configModel)...)
	plan, config := planModel.rendered(), configModel.rendered()
	plan.DestroyCommand = config.DestroyCommand
	files, diags := r.renderer.files(planModel, configModel)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	desired := desiredDigest(files)
	plan.SHA256 = types.StringValue(desired)
	plan.ID = types.StringValue(desired)
	plan.RemoteSHA256, plan.TrustedHostKey = types.StringNull(), types.StringNull()
	if config.SSH != nil {
		cfg, err := r.config(config.SSH, types.StringNull())
		if err != nil {
			resp.Diagnostics.AddAttributeError(path.Root("ssh"), "Invalid Connection", err.Error())
			return
		}
		plan.ID = types.StringValue(cfg.Address() + ":" + files[0].Path)
		plan.RemoteSHA256 = types.StringValue(desired)
		if req.State.Raw.IsNull() {
			if cfg.InsecureTrustOnFirstUse && cfg.HostKey == "" && cfg.KnownHosts == "" {
				plan.TrustedHostKey = types.StringUnknown() // recorded by the first connection
			}
		} else {
			stateModel := r.renderer.newModel()
			resp.Diagnostics.Append(req.State.Get(ctx, stateModel)...)
			state := stateModel.rendered()
			plan.TrustedHostKey = state.TrustedHostKey
			var d diag.Diagnostics
			plan.RemoteSHA256, d = r.planRemote(ctx, req.Private, config.SSH, state.TrustedHostKey, files, desired)
			resp.Diagnostics.Append(d...)
		}
	}
	resp.Diagnostics.Append(resp.Plan.Set(ctx, planModel)...)
}

func (r *renderedFilesResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	r.apply(ctx, req.Plan, req.Config, &resp.State, resp.Private, &resp.Diagnostics)
}

func (r *renderedFilesResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	r.apply(ctx, req.Plan, req.Config, &resp.State, resp.Private, &resp.Diagnostics)
}

func (r *renderedFilesResource) apply(ctx context.Context, planned tfsdk.Plan, cfg tfsdk.Config, state *tfsdk.State, private privateSetter, diags *diag.Diagnostics) {
	planModel, configModel := r.renderer.newModel(), r.renderer.newModel()
	diags.Append(planned.Get(ctx, planModel)...)
	diags.Append(cfg.Get(ctx, configModel)...)
	if diags.HasError() {
		return
	}
	plan, config := planModel.rendered(), configModel.rendered()
	files, d := r.renderer.files(planModel, configModel)
	diags.Append(d...)
	if diags.HasError() {
		return
	}
	if config.SSH != nil {
		observed, hostKey, d := r.put(ctx, config.SSH, plan.TrustedHostKey, files)
		diags.Append(d...)
		if diags.HasError() {
			return
		}
		plan.RemoteSHA256 = types.StringValue(observed)
		if plan.TrustedHostKey.IsUnknown() {
			plan.TrustedHostKey = types.StringValue(hostKey)
		}
	}
	diags.Append(state.Set(ctx, planModel)...)
	diags.Append(private.SetKey(ctx, privateUnobserved, []byte("false"))...)
}

// stateFiles re-renders the state to learn which files it delivered.
func (r *renderedFilesResource) stateFiles(m renderedModel) ([]remote.File, diag.Diagnostics) {
	return r.renderer.files(m, m)
}

func (r *renderedFilesResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	stateModel := r.renderer.newModel()
	resp.Diagnostics.Append(req.State.Get(ctx, stateModel)...)
	state := stateModel.rendered()
	if resp.Diagnostics.HasError() || state.SSH == nil {
		return
	}
	files, diags := r.stateFiles(stateModel)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(r.refresh(ctx, state.SSH, state.TrustedHostKey, files, &state.RemoteSHA256, resp.Private)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, stateModel)...)
}

func (r *renderedFilesResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	stateModel := r.renderer.newModel()
	resp.Diagnostics.Append(req.State.Get(ctx, stateModel)...)
	state := stateModel.rendered()
	if resp.Diagnostics.HasError() || state.SSH == nil || state.KeepOnDestroy.ValueBool() {
		return
	}
	files, diags := r.stateFiles(stateModel)
	resp.Diagnostics.Append(diags...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.Diagnostics.Append(r.remove(ctx, state.SSH, state.TrustedHostKey, files, state.DestroyCommand.ValueString())...)
}

func filePaths(files []remote.File) []string {
	paths := make([]string, len(files))
	for i, f := range files {
		paths[i] = f.Path
	}
	return paths
}
