package harness

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/kubernetes/pkg/controller/certificates/signer"
)

// StartCSRSigner runs kube-controller-manager's signer for
// kubernetes.io/kube-apiserver-client with the harness's client CA until
// ctx ends, so that an approved CertificateSigningRequest gets a client
// certificate the API server accepts, as in a cluster. It is the real
// controller, so a request it would refuse in a cluster (wrong usages, an
// unapproved request) is refused here too. Certificates live at most
// maxTTL, or less when the request asks for it.
func (cp *ControlPlane) StartCSRSigner(ctx context.Context, maxTTL time.Duration) error {
	keyFile := filepath.Join(cp.dir, "client-ca.key")
	der, err := x509.MarshalPKCS8PrivateKey(cp.ca.key)
	if err != nil {
		return fmt.Errorf("encode the client CA key: %w", err)
	}
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600); err != nil {
		return fmt.Errorf("write the client CA key: %w", err)
	}
	cs, err := kubernetes.NewForConfig(cp.admin)
	if err != nil {
		return err
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	ctrl, err := signer.NewKubeAPIServerClientCSRSigningController(ctx, cs,
		factory.Certificates().V1().CertificateSigningRequests(),
		filepath.Join(cp.dir, "client-ca.crt"), keyFile, maxTTL)
	if err != nil {
		return fmt.Errorf("start the CSR signer: %w", err)
	}
	factory.Start(ctx.Done())
	go ctrl.Run(ctx, 1)
	return nil
}
