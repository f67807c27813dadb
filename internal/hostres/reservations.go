package hostres

import (
	"cmp"
	"fmt"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/kha/terraform-provider-kha/internal/remote"
)

// This file keeps one configuration from giving one file to two
// resources. At plan time every host resource reserves the places it
// keeps on its host: a whole file, or a marked block of one. A resource
// that reserves a place another resource of the same Terraform walk
// reserved already fails its plan, naming the other. (On the host, the
// resource that writes a file then claims it: remote.Claim.) Without the check both applies
// succeed, each overwriting the other, and every later plan changes one of
// them back.

// reservations is one walk's record of which resource keeps what where. The
// provider's Configure makes a new one, so each walk (plan, apply) starts
// empty and provider instances never share one. Terraform plans resources
// in parallel: the mutex orders the reservations.
type reservations struct {
	mu     sync.Mutex
	byFile map[reservedFile][]reservation
}

func newReservations() *reservations { return &reservations{byFile: map[reservedFile][]reservation{}} }

// reservedFile is a file on a host. host is the connection's address
// (machineAddress), path the file's.
type reservedFile struct{ host, path string }

// reservation is one resource's hold on a file, or on a block of it.
type reservation struct {
	// marker is the block's; "" is the whole file.
	marker string
	// owner names the resource in another's plan error (reserver), and
	// id is its id (host:port:path of its first file), which
	// `terraform state list -id` finds.
	owner, id string
	// digest is what the resource renders, all of its files (sha256):
	// the same resource planned twice in one walk (a replacement plans
	// the new object after the old) reserves the same again.
	digest string
	// attr is the attribute that sets the path, as the plan error says
	// it ("config_path", "paths[1]"); "" when none was found.
	attr string
	// move, when set, is how the resource gives the file up, better than
	// "set <attr> to another file" (ConflictMover), and see the
	// documentation that shows it.
	move, see string
}

// overlaps says whether two holds on one file collide: the whole file
// collides with everything in it, a block with a block of its marker.
func (c reservation) overlaps(o reservation) bool {
	return c.marker == "" || o.marker == "" || c.marker == o.marker
}

// same says whether two reservations are one resource's, planned twice.
func (c reservation) same(o reservation) bool {
	return c.owner == o.owner && c.digest == o.digest && c.marker == o.marker
}

// take records c on f and returns the reservations of other resources it
// collides with, sorted. A collision is recorded too, so that a third
// resource on the file names both before it.
func (cs *reservations) take(f reservedFile, c reservation) []reservation {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	var others []reservation
	for _, o := range cs.byFile[f] {
		if c.same(o) {
			return nil
		}
		if c.overlaps(o) {
			others = append(others, o)
		}
	}
	cs.byFile[f] = append(cs.byFile[f], c)
	slices.SortFunc(others, func(a, b reservation) int {
		return cmp.Or(cmp.Compare(a.owner, b.owner), cmp.Compare(a.marker, b.marker), cmp.Compare(a.digest, b.digest))
	})
	return others
}

// reserve takes, for a planned resource, each place it keeps on its
// host, which must be known (m.addressKnown). A place that another resource of
// this walk keeps is an error at the attribute that sets its path.
func (d *ProviderData) reserve(m ResolvedSSH, model reserver, digest string, files []remote.Item) diag.Diagnostics {
	var diags diag.Diagnostics
	if d == nil || d.reservations == nil || slices.Contains(m.Unknown, "bastion_host") || slices.Contains(m.Unknown, "bastion_port") {
		return diags // which network the host is in is not known yet
	}
	owner, id := model.ConflictName(), hostID(m.Config, files)
	host := machineAddress(m.Config)
	for _, f := range files {
		p, marker := f.Place()
		attr := settingOf(model, p)
		c := reservation{marker: marker, owner: owner, id: id, digest: digest}
		if attr != nil {
			c.attr = attr.String()
			if mover, ok := model.(ConflictMover); ok {
				c.move, c.see = mover.ConflictMove(c.attr)
			}
		}
		others := d.reservations.take(reservedFile{host, p}, c)
		if len(others) == 0 {
			continue
		}
		at := path.Root("ssh")
		if attr != nil {
			at = *attr
		}
		summary, detail := conflictMessage(m.Config.Address()+":"+p, c, others)
		diags.AddAttributeError(at, summary, detail)
	}
	return diags
}

// machineAddress is the address that says which machine a connection
// reaches: host:port with the host in one spelling (IP addresses canonical, names
// in lower case), after the bastion's when there is one (the same private
// address behind two bastions is two machines).
func machineAddress(cfg remote.Config) string {
	canonical := func(c remote.Config) string {
		host, port, err := net.SplitHostPort(c.Address())
		if err != nil {
			return c.Address()
		}
		if ip := net.ParseIP(host); ip != nil {
			host = ip.String()
		}
		return net.JoinHostPort(strings.ToLower(host), port)
	}
	if cfg.Bastion != nil {
		return canonical(*cfg.Bastion) + " > " + canonical(cfg)
	}
	return canonical(cfg)
}

// settingOf is the attribute of model that sets the path file, nil when
// none does.
func settingOf(model reserver, file string) *path.Path {
	for _, s := range model.PathSettings() {
		if s.Value.ValueString() == file {
			return &s.Attribute
		}
	}
	return nil
}

// conflictMessage is the summary and detail of a reservation that collides
// with others on the file at where (host:port:path).
func conflictMessage(where string, c reservation, others []reservation) (string, string) {
	// Two resources of one type may not differ in what names them.
	name := func(o reservation) string {
		if o.owner == c.owner {
			return "another " + o.owner
		}
		return o.owner
	}
	// The others are named by their ids too, which find them in the state.
	names := make([]string, len(others))
	blocks, wholes := 0, 0
	for i, o := range others {
		names[i] = fmt.Sprintf("%s (id %s)", name(o), o.id)
		if o.marker == "" {
			wholes++
		} else {
			blocks++
		}
	}
	var b strings.Builder
	summary := "File Managed by Two Resources"
	switch {
	case c.marker == "" && blocks == 0:
		fmt.Fprintf(&b, "This %s and %s both manage %s. Each apply overwrites what the other wrote, and every later "+
			"plan changes it back: no configuration of the two stays on the host.", c.owner, strings.Join(names, " and "), where)
	case c.marker != "" && wholes == 0:
		summary = "Block Managed by Two Resources"
		fmt.Fprintf(&b, "This %s and %s both manage the block %q (`# BEGIN kha %s`) of %s. Each apply replaces the "+
			"other's lines, and every later plan changes them back.", c.owner, strings.Join(names, " and "), c.marker, c.marker, where)
	default:
		fmt.Fprintf(&b, "This %s (%s) and ", c.owner, holdOf(c))
		for i, o := range others {
			if i > 0 {
				b.WriteString(" and ")
			}
			fmt.Fprintf(&b, "%s (id %s; %s)", name(o), o.id, holdOf(o))
		}
		fmt.Fprintf(&b, " both manage %s. Writing the whole file drops the block, and putting the block back changes "+
			"the file: every apply undoes the other, and every later plan changes it back.", where)
	}
	place := "file"
	if c.marker != "" && wholes == 0 {
		place = "block"
	}
	fmt.Fprintf(&b, "\n\nGive the %s to one of them: on this resource, %s", place, moveOf(c, others))
	sees := []string{c.see}
	for _, o := range others {
		fmt.Fprintf(&b, "; or on %s, %s", name(o), moveOf(o, []reservation{c}))
		sees = append(sees, o.see)
	}
	b.WriteString(". A resource already applied is found by its id: terraform state list -id=<id> (OpenTofu: tofu state list -id=<id>).")
	slices.Sort(sees)
	for _, see := range slices.Compact(sees) {
		if see != "" {
			b.WriteString(" See " + see + ".")
		}
	}
	return summary, b.String()
}

// holdOf says what of the file a reservation holds.
func holdOf(c reservation) string {
	if c.marker == "" {
		return "the whole file"
	}
	return fmt.Sprintf("its block %q", c.marker)
}

// moveOf says how c's resource gives up the place it shares with others.
func moveOf(c reservation, others []reservation) string {
	attr := "the attribute that sets the path"
	if c.attr != "" {
		attr = "`" + c.attr + "`"
	}
	switch {
	case c.move != "":
		return c.move
	case c.marker != "" && !slices.ContainsFunc(others, func(o reservation) bool { return o.marker == "" }):
		return fmt.Sprintf("set `marker` to a name of its own (each block needs one), or %s to another file", attr)
	default:
		return fmt.Sprintf("set %s to another file", attr)
	}
}
