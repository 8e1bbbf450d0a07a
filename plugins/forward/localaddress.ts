/**
 * Our end of an upstream socket, filled in by an exchange when the caller passes one: dnstap's
 * FORWARDER_* records carry it as their query address (CoreDNS's proxy.Connect returns it).
 * Callers that do not tap pass nothing and pay nothing.
 */
export interface LocalAddress {
  address: string;
  port: number;
}
