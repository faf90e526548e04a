package config

import "errors"

// ValidateReconciler checks what the reconciler (hookledger reconcile and
// the scheduled reconciler function) needs: the ledger and the sources, whose
// verifiers and signing secrets it uses to feed missing events through the
// receiver.
func (c Config) ValidateReconciler() error {
	errs := c.validateCommon()
	if c.SourcesJSON == "" {
		errs = append(errs, errors.New("HOOKLEDGER_SOURCES is empty: set it (or HOOKLEDGER_SOURCES_FILE) to the same sources JSON the receiver uses; see README, Configuration"))
	}
	return errors.Join(errs...)
}
