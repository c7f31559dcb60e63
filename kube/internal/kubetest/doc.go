// Package kubetest runs a real Kubernetes control plane on loopback for
// fairsched-kube's end-to-end tests and benchmark: etcd, kube-apiserver,
// KWOK (fake nodes and pod lifecycles), kube-controller-manager (the job
// controller and what Jobs, Deployments and PodDisruptionBudgets need) and,
// when asked, kube-scheduler.
//
// The binaries come from make kube-bins, which builds them into
// ~/.cache/fairsched/kube-bins/<version>/bin ($XDG_CACHE_HOME when set),
// shared by every checkout on the machine; KUBE_BINS=dir points elsewhere. Without them a test that calls New skips, saying so, unless
// FAIRSCHED_KUBE_E2E=1 (make test-kube), where their absence fails it.
//
// Every server listens on 127.0.0.1 on a free port; every process runs in a
// process group of its own and is killed with it when the cluster closes
// (t.Cleanup for New), and its data and logs live in a temporary directory.
// Two users authenticate with static tokens: an admin (system:masters) and
// the adapter, named as the fairsched-kube ServiceAccount of
// deploy/kubernetes so that the RBAC there is what authorizes it.
//
// KWOK plays these stages (kwok-stages.yaml) on the nodes the cluster adds:
//
//   - a node becomes Ready at once;
//   - a pod bound to a node runs, after the duration in annotation
//     kwok.fairsched.io/start-after if any;
//   - a running pod with annotation kwok.fairsched.io/run-for (a Go
//     duration) succeeds that long after it started running, and one with
//     kwok.fairsched.io/fail-after fails (exit code 1) after that long;
//     a pod with neither runs until deleted;
//   - a pod being deleted (an eviction, a delete with a grace period) fails
//     with exit code 143 and is deleted when its grace period ends, as a
//     workload that ignores SIGTERM, or after the duration in annotation
//     kwok.fairsched.io/exit-on-term when it has one.
package kubetest
