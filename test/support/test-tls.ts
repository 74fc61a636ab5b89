// A test certificate authority and a server certificate it signed, made with the system's openssl
// in a fresh temporary directory: the relay serves the certificate, the daemon's connector trusts
// the CA through its CA file, and Chromium trusts exactly this certificate by its key's SPKI digest.
import { execFileSync } from 'node:child_process';
import { createHash, X509Certificate } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface TestTls {
  dir: string;
  caFile: string;
  certFile: string;
  keyFile: string;
  /** base64 SHA-256 of the server key's SubjectPublicKeyInfo (Chromium's --ignore-certificate-errors-spki-list). */
  spki: string;
  /** Another CA's file: a connector trusting it must refuse the relay. */
  otherCaFile: string;
  remove(): void;
}

const openssl = (args: string[], cwd: string): void => {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
};

function makeCa(dir: string, name: string): void {
  openssl(
    ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.pem`, '-days', '2', '-subj', `/CN=${name}`],
    dir,
  );
}

/** A CA and a certificate for 127.0.0.1, ::1 and localhost, valid for two days. */
export function makeTestTls(): TestTls {
  const dir = mkdtempSync(join(tmpdir(), 'm4a-tls-'));
  makeCa(dir, 'test-ca');
  makeCa(dir, 'other-ca');
  writeFileSync(join(dir, 'server.ext'), 'subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nextendedKeyUsage=serverAuth\nbasicConstraints=CA:FALSE\n');
  openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1'], dir);
  openssl(
    ['x509', '-req', '-in', 'server.csr', '-CA', 'test-ca.pem', '-CAkey', 'test-ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'server.ext'],
    dir,
  );
  const cert = new X509Certificate(readFileSync(join(dir, 'server.pem')));
  const spki = createHash('sha256')
    .update(cert.publicKey.export({ type: 'spki', format: 'der' }))
    .digest('base64');
  return {
    dir,
    caFile: join(dir, 'test-ca.pem'),
    certFile: join(dir, 'server.pem'),
    keyFile: join(dir, 'server.key'),
    spki,
    otherCaFile: join(dir, 'other-ca.pem'),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}
