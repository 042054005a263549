package kubetest

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// NodeName is the one Node the simulated kubelet runs.
const NodeName = "kubetest-node"

// Setup creates the namespace (if missing) and the Node the Pods are bound
// to, and waits until the namespace can take Pods.
func (p *Plane) Setup(ctx context.Context, namespace string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}
	if _, err := p.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubetest: namespace %s: %w", namespace, err)
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: NodeName}}
	if _, err := p.Client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("kubetest: node: %w", err)
	}
	// Admission refuses Pods until the controller manager has made the
	// namespace's default ServiceAccount.
	for {
		_, err := p.Client.CoreV1().ServiceAccounts(namespace).Get(ctx, "default", metav1.GetOptions{})
		if err == nil {
			return nil
		}
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("kubetest: default service account of %s: %w", namespace, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kubetest: no default service account in %s: %w", namespace, ctx.Err())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// PodSpec is a Pod the test creates.
type PodSpec struct {
	Name        string
	Labels      map[string]string
	Annotations map[string]string
}

// CreatePod creates a Pod already bound to NodeName (as if scheduled), in
// phase Pending with no IP.
func (p *Plane) CreatePod(ctx context.Context, namespace string, spec PodSpec) error {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: spec.Name, Labels: spec.Labels, Annotations: spec.Annotations},
		Spec: corev1.PodSpec{
			NodeName:   NodeName,
			Containers: []corev1.Container{{Name: "engine", Image: "enginesim"}},
		},
	}
	if _, err := p.Client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("kubetest: create pod %s: %w", spec.Name, err)
	}
	return nil
}

// SetStatus sets a Pod's IP, phase Running and Ready condition, as the
// kubelet would, through the status subresource.
func (p *Plane) SetStatus(ctx context.Context, namespace, name, ip string, ready bool) error {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	now := metav1.NewTime(time.Now())
	patch := map[string]any{"status": map[string]any{
		"phase":  corev1.PodRunning,
		"podIP":  ip,
		"podIPs": []map[string]string{{"ip": ip}},
		"conditions": []map[string]any{
			{"type": corev1.PodReady, "status": st, "lastTransitionTime": now},
			{"type": corev1.ContainersReady, "status": st, "lastTransitionTime": now},
		},
	}}
	b, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	if _, err := p.Client.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, b, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("kubetest: status of pod %s: %w", name, err)
	}
	return nil
}

// StartPod creates a Pod and makes it Running and Ready at ip.
func (p *Plane) StartPod(ctx context.Context, namespace string, spec PodSpec, ip string) error {
	if err := p.CreatePod(ctx, namespace, spec); err != nil {
		return err
	}
	return p.SetStatus(ctx, namespace, spec.Name, ip, true)
}

// DeletePod deletes a Pod at once (grace period 0: no kubelet confirms a
// graceful deletion here).
func (p *Plane) DeletePod(ctx context.Context, namespace, name string) error {
	zero := int64(0)
	err := p.Client.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: &zero})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("kubetest: delete pod %s: %w", name, err)
	}
	return nil
}

// LoopbackIP returns the i-th pod address (i from 0): 127.0.0.2 up to
// 127.0.0.254, then 127.0.1.1 and on; never a .0 or .255 address.
func LoopbackIP(i int) string {
	return fmt.Sprintf("127.0.%d.%d", (i+1)/254, (i+1)%254+1)
}
