package web

// routesLedger mounts the ledger pages.
func (p *Panel) routesLedger() {}
