import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pollUntil } from '../helpers/poll.js';
import { type LocalServer, startServer } from '../unit/net/helpers.js';
import { withEgressComputer } from './egress-fixture.js';
import { makeCertificates, startHttpsFiles, startSshd } from './egress-names-fixture.js';
import { buildGitRepo } from './egress-packages.js';

const TOKEN = 'names-token-5b1e0c2d';
/** Java runs where the machine has it (its trust store is the one Paddock extends). */
const HAS_JAVA = existsSync('/usr/bin/java') && existsSync('/etc/ssl/certs/java/cacerts');
/** Every proxy variable a job gets: the programs below run without any of them. */
const NO_PROXY_VARIABLES =
  'unset HTTP_PROXY HTTPS_PROXY ALL_PROXY NO_PROXY http_proxy https_proxy all_proxy no_proxy';

const JAVA_CLIENT = `
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
public class Fetch {
  public static void main(String[] urls) throws Exception {
    HttpClient client = HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    for (String url : urls) {
      HttpResponse<String> r = client.send(HttpRequest.newBuilder(URI.create(url)).build(), HttpResponse.BodyHandlers.ofString());
      System.out.println("java " + r.statusCode() + " " + r.body().trim());
    }
  }
}
`;

describe('egress by name: programs reach allowed hosts with no proxy variable (real bwrap)', {
  concurrency: false,
}, () => {
  let dir: string;
  let stub: LocalServer;
  let https: Awaited<ReturnType<typeof startHttpsFiles>>;
  let sshd: Awaited<ReturnType<typeof startSshd>>;
  let upstreamCa: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'paddock-names-'));
    buildGitRepo(dir);
    const tls = makeCertificates(dir, ['api.test', 'tls.test']);
    upstreamCa = tls.ca;
    https = await startHttpsFiles(dir, tls);
    stub = await startServer((req, res) => res.end(`plain hi to ${req.url}`));
    sshd = await startSshd(dir);
  });
  after(async () => {
    await stub.close();
    await https.close();
    await sshd.close();
    rmSync(dir, { recursive: true, force: true });
  });

  const policy = () => ({
    http: {
      allow: [`stub.test:${stub.port}`, `api.test:${https.port}`, `tls.test:${https.port}`],
      hosts: {
        'stub.test': '127.0.0.1',
        'api.test': '127.0.0.1',
        'tls.test': '127.0.0.1',
        'git.ssh.test': '127.0.0.1',
      },
      // biome-ignore lint/suspicious/noTemplateCurlyInString: the ${VAR} syntax of inject rules
      inject: [{ domain: 'api.test', headers: { Authorization: 'Bearer ${NAMES_TOKEN}' } }],
    },
    tcp: { allow: [`git.ssh.test:${sshd.port}`] },
  });

  it("curl, Python urllib, Node 20 fetch, git over https and a Java client connect by name; TLS Paddock terminates is trusted everywhere, other TLS stays the upstream's", async () => {
    await withEgressComputer(
      { policy: policy(), env: { NAMES_TOKEN: TOKEN }, upstreamCa: [upstreamCa] },
      async ({ run, rows }) => {
        const plain = `http://stub.test:${stub.port}`;
        const api = `https://api.test:${https.port}`;
        const r = await run(
          [
            NO_PROXY_VARIABLES,
            `curl -sS ${plain}/curl; echo`,
            `python3 -c "import urllib.request; print(urllib.request.urlopen('${plain}/py', timeout=20).read().decode())"`,
            `node -e "fetch('${plain}/node').then(r => r.text()).then(console.log, e => console.log('node failed', e.cause ?? e))"`,
            // TLS Paddock terminates (a credential is injected): the system bundle alone is enough
            `env -u SSL_CERT_FILE -u CURL_CA_BUNDLE curl -sS -v ${api}/curl 2>/workspace/curl.txt; grep -i 'issuer:' /workspace/curl.txt | sed 's/^/terminated /'`,
            `python3 -c "import urllib.request; print('py-tls ' + urllib.request.urlopen('${api}/py', timeout=20).read().decode())"`,
            `node -e "fetch('${api}/node').then(r => r.text()).then(t => console.log('node-tls ' + t), e => console.log('node-tls failed', e.cause ?? e))"`,
            `git clone -q ${api}/repo.git /workspace/https-clone && sed 's/^/git-https /' /workspace/https-clone/README`,
            ...(HAS_JAVA
              ? [
                  `cat > /workspace/Fetch.java <<'JAVA'\n${JAVA_CLIENT}\nJAVA`,
                  `java /workspace/Fetch.java ${api}/java ${plain}/java`,
                ]
              : []),
            // another domain's TLS is end to end: its own issuer, which the computer does not trust
            `curl -sS https://tls.test:${https.port}/ >/dev/null 2>&1; echo "untrusted=$?"`,
            `curl -sSk -v https://tls.test:${https.port}/ 2>&1 | grep -i 'issuer:' | sed 's/^/end-to-end /'`,
          ].join('\n'),
          40_000,
        );
        assert.equal(r.exitCode, 0, `${r.stdout}\n${r.stderr}`);
        for (const who of ['curl', 'py', 'node', ...(HAS_JAVA ? ['java'] : [])])
          assert.match(r.stdout, new RegExp(`plain hi to /${who}`), `${who}: ${r.stdout}\n${r.stderr}`);
        assert.match(r.stdout, /terminated .*issuer: CN=Paddock egress CA/);
        assert.match(r.stdout, /tls greeting for \/curl auth=present/);
        assert.match(r.stdout, /py-tls tls greeting for \/py auth=present/);
        assert.match(r.stdout, /node-tls tls greeting for \/node auth=present/);
        if (HAS_JAVA) assert.match(r.stdout, /java 200 tls greeting for \/java auth=present/);
        assert.match(r.stdout, /git-https cloned-through-the-proxy/);
        assert.match(r.stdout, /untrusted=60/);
        assert.match(r.stdout, /end-to-end .*issuer: CN=Upstream test CA/);
        assert.doesNotMatch(r.stdout + r.stderr, new RegExp(TOKEN));
        assert.deepEqual(r.egressRefused, []);
        // a tunnel's row is completed when the connection is gone, a moment after the program
        const mine = await pollUntil(
          () => {
            const now = rows().filter((row) => row.jobId === r.jobId);
            return now.every((row) => row.state !== 'running') ? now : null;
          },
          'every connection row to be complete',
          10_000,
        );
        assert.ok(mine.length >= 8);
        const failed = mine.filter((row) => !row.success || row.parentId !== r.parentId);
        assert.deepEqual(failed, []);
        assert.ok(mine.every((row) => JSON.parse(row.input).route === 'name'));
        assert.ok(mine.some((row) => JSON.parse(row.input).kind === 'https-terminated'));
        assert.ok(
          https.seen.filter((s) => s.path === '/curl').every((s) => s.authorization === `Bearer ${TOKEN}`),
        );
      },
    );
  });

  it('git over ssh reaches a tcp.allow host and port by name, one audit row for the connection', async () => {
    await withEgressComputer({ policy: policy() }, async ({ run, rows }) => {
      const r = await run(
        [
          NO_PROXY_VARIABLES,
          `cat > /workspace/id <<'KEY'\n${sshd.clientKey.trim()}\nKEY`,
          'chmod 600 /workspace/id',
          `export GIT_SSH_COMMAND="ssh -i /workspace/id -o BatchMode=yes -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"`,
          `git clone -q ssh://root@git.ssh.test:${sshd.port}${dir}/repo.git /workspace/ssh-clone`,
          `sed 's/^/git-ssh /' /workspace/ssh-clone/README`,
        ].join('\n'),
        60_000,
      );
      assert.equal(r.exitCode, 0, r.stderr);
      assert.match(r.stdout, /git-ssh cloned-through-the-proxy/);
      const ssh = rows().filter((row) => row.jobId === r.jobId);
      assert.equal(ssh.length, 1);
      const input = JSON.parse(ssh[0]!.input);
      assert.equal(input.kind, 'tcp');
      assert.equal(input.host, 'git.ssh.test');
      assert.equal(input.port, sshd.port);
      assert.equal(ssh[0]!.policyRule, `tcp.allow[0]=git.ssh.test:${sshd.port}`);
      assert.ok((ssh[0]!.outputBytes ?? 0) > 0);
    });
  });
});
