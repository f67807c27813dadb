package clusterconfig

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// API is an authenticated connection to kube-apiserver: one request, its
// status and body. kubeconfig.APIClient is the real one.
type API interface {
	Do(ctx context.Context, method, path, contentType string, body []byte) (status int, response []byte, err error)
}

// Logger receives a message for each request to the apiserver, with the
// ConfigMap as fields; never its content.
type Logger func(ctx context.Context, msg string, fields map[string]any)

// Ref is one key of one ConfigMap.
type Ref struct {
	Namespace, Name, Key string
}

// The ConfigMaps that hold the cluster's endpoint.
var (
	// KubeadmConfig holds kubeadm's ClusterConfiguration, read by kubeadm
	// join --control-plane and kubeadm upgrade.
	KubeadmConfig = Ref{Namespace: "kube-system", Name: "kubeadm-config", Key: "ClusterConfiguration"}
	// ClusterInfo holds the kubeconfig kubeadm join discovers the cluster
	// from (public, signed by bootstrap tokens).
	ClusterInfo = Ref{Namespace: "kube-public", Name: "cluster-info", Key: "kubeconfig"}
	// KubeProxy holds kube-proxy's kubeconfig, for every node.
	KubeProxy = Ref{Namespace: "kube-system", Name: "kube-proxy", Key: "kubeconfig.conf"}
)

func (r Ref) String() string { return r.Namespace + "/" + r.Name }

func (r Ref) path() string {
	return "/api/v1/namespaces/" + url.PathEscape(r.Namespace) + "/configmaps/" + url.PathEscape(r.Name)
}

// ConflictRetries is how many times an edit is tried again after the
// ConfigMap changed between its read and its write (HTTP 409).
const ConflictRetries = 5

// ErrNotFound is a ConfigMap that does not exist.
var ErrNotFound = errors.New("not found")

// configMap is a ConfigMap as the API serves it: every field kept as it
// came (json.RawMessage), so that a write sends back exactly what was read
// with one data key changed.
type configMap struct {
	fields map[string]json.RawMessage
	data   map[string]string
}

func (c *configMap) resourceVersion() string {
	var meta struct {
		ResourceVersion string `json:"resourceVersion"`
	}
	_ = json.Unmarshal(c.fields["metadata"], &meta)
	return meta.ResourceVersion
}

// Get reads ref's value; ErrNotFound (wrapped) when the ConfigMap does not
// exist. A ConfigMap without the key is an error of its own.
func Get(ctx context.Context, api API, ref Ref, log Logger) (string, error) {
	cm, err := get(ctx, api, ref, log)
	if err != nil {
		return "", err
	}
	v, ok := cm.data[ref.Key]
	if !ok {
		return "", fmt.Errorf("ConfigMap %s has no data key %q", ref, ref.Key)
	}
	return v, nil
}

func get(ctx context.Context, api API, ref Ref, log Logger) (*configMap, error) {
	log(ctx, "reading ConfigMap", map[string]any{"configmap": ref.String()})
	status, body, err := api.Do(ctx, http.MethodGet, ref.path(), "", nil)
	if err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s: %w", ref, err)
	}
	if status == http.StatusNotFound {
		return nil, fmt.Errorf("ConfigMap %s: %w", ref, ErrNotFound)
	}
	if status != http.StatusOK {
		return nil, fmt.Errorf("reading ConfigMap %s: %w", ref, statusError(status, body))
	}
	cm := &configMap{}
	if err := json.Unmarshal(body, &cm.fields); err != nil {
		return nil, fmt.Errorf("reading ConfigMap %s: the answer is not a JSON object", ref)
	}
	if raw, ok := cm.fields["data"]; ok {
		if err := json.Unmarshal(raw, &cm.data); err != nil {
			return nil, fmt.Errorf("reading ConfigMap %s: its data is not a map of strings", ref)
		}
	}
	return cm, nil
}

// Edit changes ref's value with edit: a GET, edit on the value read, and
// a PUT of the ConfigMap as read with the new value and the
// resourceVersion read, so that a ConfigMap changed in between is not
// overwritten: the apiserver answers 409 Conflict, and the edit starts
// again from a new read, up to ConflictRetries times. Nothing is written
// when edit changes nothing. changed says whether a write was made.
// Errors name the ConfigMap and the apiserver's reason, never content.
func Edit(ctx context.Context, api API, ref Ref, edit func(current string) (string, error), log Logger) (changed bool, err error) {
	for attempt := 0; ; attempt++ {
		cm, err := get(ctx, api, ref, log)
		if err != nil {
			return false, err
		}
		current, ok := cm.data[ref.Key]
		if !ok {
			return false, fmt.Errorf("ConfigMap %s has no data key %q", ref, ref.Key)
		}
		next, err := edit(current)
		if err != nil {
			return false, fmt.Errorf("ConfigMap %s, key %s: %w", ref, ref.Key, err)
		}
		if next == current {
			log(ctx, "ConfigMap already as wanted; nothing written", map[string]any{"configmap": ref.String()})
			return false, nil
		}
		cm.data[ref.Key] = next
		data, err := json.Marshal(cm.data)
		if err != nil {
			return false, err
		}
		cm.fields["data"] = data
		body, err := json.Marshal(cm.fields)
		if err != nil {
			return false, err
		}
		log(ctx, "updating ConfigMap", map[string]any{"configmap": ref.String(), "resource_version": cm.resourceVersion(), "attempt": attempt + 1})
		status, answer, err := api.Do(ctx, http.MethodPut, ref.path(), "application/json", body)
		if err != nil {
			return false, fmt.Errorf("updating ConfigMap %s: %w", ref, err)
		}
		switch {
		case status == http.StatusOK:
			return true, nil
		case status == http.StatusConflict && attempt < ConflictRetries:
			log(ctx, "ConfigMap changed since it was read; reading it again", map[string]any{"configmap": ref.String()})
			continue
		case status == http.StatusConflict:
			return false, fmt.Errorf("updating ConfigMap %s: it changed between every read and write (%d tries); "+
				"something else keeps writing it: %w", ref, attempt+1, statusError(status, answer))
		}
		return false, fmt.Errorf("updating ConfigMap %s: %w", ref, statusError(status, answer))
	}
}

// RestartedAtAnnotation is the pod template annotation `kubectl rollout
// restart` sets: a new value rolls every pod of the workload.
const RestartedAtAnnotation = "kubectl.kubernetes.io/restartedAt"

// RestartDaemonSet rolls a DaemonSet's pods as `kubectl rollout restart`
// does: a strategic merge patch of its pod template's restartedAt
// annotation.
func RestartDaemonSet(ctx context.Context, api API, namespace, name string, at time.Time, log Logger) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"template": map[string]any{"metadata": map[string]any{
		"annotations": map[string]string{RestartedAtAnnotation: at.Format(time.RFC3339)}}}}})
	if err != nil {
		return err
	}
	ref := namespace + "/" + name
	log(ctx, "restarting DaemonSet", map[string]any{"daemonset": ref})
	status, answer, err := api.Do(ctx, http.MethodPatch, "/apis/apps/v1/namespaces/"+url.PathEscape(namespace)+"/daemonsets/"+url.PathEscape(name),
		"application/strategic-merge-patch+json", patch)
	if err != nil {
		return fmt.Errorf("restarting DaemonSet %s: %w", ref, err)
	}
	if status != http.StatusOK {
		return fmt.Errorf("restarting DaemonSet %s: %w", ref, statusError(status, answer))
	}
	return nil
}

// statusError is the apiserver's refusal: its HTTP status and the
// message of its Status object (which names objects and permissions, not
// their content).
func statusError(status int, body []byte) error {
	var s struct {
		Message string `json:"message"`
		Reason  string `json:"reason"`
	}
	msg := ""
	if json.Unmarshal(body, &s) == nil && s.Message != "" {
		msg = s.Message
	} else {
		msg = strings.TrimSpace(string(bytes.ToValidUTF8(body[:min(len(body), 200)], nil)))
	}
	hint := ""
	switch status {
	case http.StatusUnauthorized:
		hint = " (the apiserver refused admin_kubeconfig_path's credentials)"
	case http.StatusForbidden:
		hint = " (the user of admin_kubeconfig_path may not do this: use kubeadm's admin.conf, whose user is a cluster admin)"
	}
	return fmt.Errorf("HTTP %d%s: %s", status, hint, msg)
}
