// Package images checks the OCI images `make images` builds
// (hack/imagebuild) against the Helm chart that runs them, and runs them:
// the image config is what the chart's Deployments assume (the program as
// entrypoint, the pod's user, nothing else executable, no shell), the
// chart's default image references and those an operator gets with
// --set <component>.image.repository=<registry>/<program> name what
// `make images` tags and `make push` pushes, and each image, loaded into
// Debian's podman, runs with the chart's security context, arguments,
// environment and configuration against the harness's API server until
// it reports ready, printing the commit it was built from on --version.
//
// The tests need the built layouts: `make test-images` builds them and
// sets JOULIE_IMAGES; without it they skip.
package images
