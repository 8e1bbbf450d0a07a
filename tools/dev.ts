/**
 * `npm start`: clusterdns on 127.0.0.1:1053 with the kubeadm-style Corefile in
 * examples/Corefile.dev, against a local sandbox API server loaded with examples/cluster.yaml.
 * No cluster needed:  dig @127.0.0.1 -p 1053 kubernetes.default.svc.cluster.local
 */
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startSandbox } from '../sandbox/server.js';
import { main } from '../src/main.js';

const root = resolve(fileURLToPath(import.meta.url), '../../..');
const sandbox = await startSandbox({ files: [resolve(root, 'examples/cluster.yaml')] });
process.stdout.write(`sandbox Kubernetes API on ${sandbox.url} (examples/cluster.yaml)\n`);
process.env.SANDBOX_URL = sandbox.url;
await main(['-conf', resolve(root, 'examples/Corefile.dev'), ...process.argv.slice(2)]);
process.stdout.write('try: dig @127.0.0.1 -p 1053 kubernetes.default.svc.cluster.local\n');
