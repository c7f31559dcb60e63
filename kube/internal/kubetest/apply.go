package kubetest

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"
)

// Apply creates or updates, as the admin, the objects of the YAML files in
// order (server-side apply), as kubectl apply -f would; after a
// CustomResourceDefinition it waits until the API server serves it, so
// that a later document may be one of its objects.
func (c *Cluster) Apply(ctx context.Context, files ...string) error {
	var docs []*unstructured.Unstructured
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("cannot read %s: %w", f, err)
		}
		objs, err := decodeManifests(data)
		if err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		docs = append(docs, objs...)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(c.Admin)
	if err != nil {
		return err
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))
	dyn, err := dynamic.NewForConfig(c.Admin)
	if err != nil {
		return err
	}
	force := true
	for _, obj := range docs {
		gvk := obj.GroupVersionKind()
		var mapping *meta.RESTMapping
		err := Poll(ctx, time.Minute, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
			var err error
			mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if meta.IsNoMatchError(err) {
				mapper.Reset()
				return false, Retry(err)
			}
			return err == nil, err
		})
		if err != nil {
			return fmt.Errorf("cannot apply %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		body, err := json.Marshal(obj.Object)
		if err != nil {
			return err
		}
		var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			ns := obj.GetNamespace()
			if ns == "" {
				ns = "default"
			}
			ri = dyn.Resource(mapping.Resource).Namespace(ns)
		}
		if _, err := ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: "kubetest", Force: &force}); err != nil {
			return fmt.Errorf("cannot apply %s %s: %w", gvk.Kind, obj.GetName(), err)
		}
		if gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition" {
			err := Poll(ctx, time.Minute, 100*time.Millisecond, func(ctx context.Context) (bool, error) {
				got, err := ri.Get(ctx, obj.GetName(), metav1.GetOptions{})
				if err != nil {
					return false, Retry(err)
				}
				conds, _, _ := unstructured.NestedSlice(got.Object, "status", "conditions")
				for _, cnd := range conds {
					m, _ := cnd.(map[string]any)
					if m["type"] == "Established" && m["status"] == "True" {
						return true, nil
					}
				}
				return false, nil
			})
			if err != nil {
				return fmt.Errorf("the CustomResourceDefinition %s is not established: %w", obj.GetName(), err)
			}
			mapper.Reset()
		}
	}
	return nil
}

// decodeManifests splits YAML (or JSON) documents into objects, skipping
// empty ones.
func decodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		var m map[string]any
		err := dec.Decode(&m)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("document %d: %w", i, err)
		}
		if len(m) == 0 {
			continue
		}
		u := &unstructured.Unstructured{Object: m}
		if u.GetKind() == "" || u.GetAPIVersion() == "" || u.GetName() == "" {
			return nil, fmt.Errorf("document %d: apiVersion, kind and metadata.name are required", i)
		}
		out = append(out, u)
	}
}
