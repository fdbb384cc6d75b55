// Package check holds the tests of deploy/: the Helm chart rendered by helm
// and decoded strictly into the Kubernetes API types, and deploy/compose.yaml
// validated against the Compose Specification. It is a module of its own so
// that k8s.io/api and compose-go stay out of approvalbot's go.mod; .ci/run
// runs it with HELM set to the helm it installed.
package check
