package config

import "errors"

// ValidateReconciler checks what the reconciler needs: the ledger and the sources.
func (c Config) ValidateReconciler() error {
	errs := c.validateCommon()
	if c.SourcesJSON == "" {
		errs = append(errs, errors.New("HOOKLEDGER_SOURCES is empty: set it (or HOOKLEDGER_SOURCES_FILE) to the same sources JSON the receiver uses; see README, Configuration"))
	}
	return errors.Join(errs...)
}
