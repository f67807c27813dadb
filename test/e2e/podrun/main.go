// Command podrun is the end-to-end test's stand-in for the kubelet running
// a static pod with host networking: it reads the pod's manifest, mounts
// its hostPath volumes where the container expects them, adds its
// hostAliases to /etc/hosts, and executes the container's program (a
// binary built here, as no container runtime runs here) with the pod's
// arguments and environment. Run it as root in the host's network and
// mount namespaces; it makes a private mount namespace of its own, where
// /etc is an overlay, so nothing it mounts or creates reaches the host.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/kha/terraform-provider-kha/internal/testhost"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: podrun MANIFEST PROGRAM")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "podrun:", err)
		os.Exit(1)
	}
}

func run(manifest, program string) error {
	b, err := os.ReadFile(manifest)
	if err != nil {
		return err
	}
	// KnownFields refuses what podrun would not honour as the kubelet does.
	p, err := testhost.ParsePod(b)
	if err != nil {
		return fmt.Errorf("%s: %w", manifest, err)
	}
	if p.Kind != "Pod" || !p.Spec.HostNetwork || len(p.Spec.Containers) != 1 {
		return fmt.Errorf("%s: want a Pod with hostNetwork and one container", manifest)
	}
	c := p.Spec.Containers[0]
	// Mount namespaces belong to threads until exec: stay on this one.
	runtime.LockOSThread()
	if err := syscall.Unshare(syscall.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare: %w", err)
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private: %w", err)
	}
	stage, err := os.MkdirTemp("", "podrun-")
	if err != nil {
		return err
	}
	// The host's files, seen before /etc is overlaid: the volumes and the
	// hosts file (both may be mounts of their own under /etc).
	hosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		return err
	}
	for _, a := range p.Spec.HostAliases {
		for _, h := range a.Hostnames {
			hosts = fmt.Appendf(hosts, "%s\t%s\n", a.IP, h)
		}
	}
	if err := os.WriteFile(filepath.Join(stage, "hosts"), hosts, 0o644); err != nil {
		return err
	}
	sources := map[string]string{}
	for _, v := range p.Spec.Volumes {
		staged := filepath.Join(stage, "volume-"+v.Name)
		if err := bind(v.HostPath.Path, staged, 0); err != nil {
			return fmt.Errorf("volume %s: %w", v.Name, err)
		}
		sources[v.Name] = staged
	}
	for _, d := range []string{"upper", "work"} {
		if err := os.Mkdir(filepath.Join(stage, d), 0o755); err != nil {
			return err
		}
	}
	overlay := fmt.Sprintf("lowerdir=/etc,upperdir=%s/upper,workdir=%s/work", stage, stage)
	if err := syscall.Mount("overlay", "/etc", "overlay", 0, overlay); err != nil {
		return fmt.Errorf("overlay /etc: %w", err)
	}
	if err := bind(filepath.Join(stage, "hosts"), "/etc/hosts", syscall.MS_RDONLY); err != nil {
		return err
	}
	for _, m := range c.VolumeMounts {
		src, ok := sources[m.Name]
		if !ok {
			return fmt.Errorf("volumeMount %s has no volume", m.Name)
		}
		var flags uintptr
		if m.ReadOnly {
			flags = syscall.MS_RDONLY
		}
		if err := bind(src, m.MountPath, flags); err != nil {
			return fmt.Errorf("volumeMount %s: %w", m.Name, err)
		}
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for _, e := range c.Env {
		env = append(env, e.Name+"="+e.Value)
	}
	return syscall.Exec(program, append([]string{program}, c.Args...), env)
}

// bind mounts the file or directory src at target, creating target's
// mount point (and its parents) first; flags may add MS_RDONLY.
func bind(src, target string, flags uintptr) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
		return err
	}
	if fi.IsDir() {
		err = os.MkdirAll(target, 0o755)
	} else if _, statErr := os.Stat(target); os.IsNotExist(statErr) {
		err = os.WriteFile(target, nil, 0o600)
	}
	if err != nil {
		return err
	}
	if err := syscall.Mount(src, target, "", syscall.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind %s on %s: %w", src, target, err)
	}
	if flags&syscall.MS_RDONLY != 0 {
		return syscall.Mount("", target, "", syscall.MS_BIND|syscall.MS_REMOUNT|syscall.MS_RDONLY, "")
	}
	return nil
}
