import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sandboxFor } from './helpers.js';

const sandbox = sandboxFor({
  http: {
    allow: [
      '*.example.com',
      'api.example.org',
      'api.example.org:8443',
      'bücher.de',
      '127.0.0.1:8080',
      '[::1]:9000',
      'localhost:3000',
      'intranet',
    ],
    deny: ['bad.example.com', 'evil.example.org'],
  },
});

function get(url: string, method = 'GET') {
  return sandbox.check({ type: 'http', method, url });
}

describe('domain rules (lexical)', () => {
  it('lets *.example.com match subdomains only', () => {
    assert.equal(get('https://api.example.com/v1').rule, 'http.allow[0]=*.example.com');
    assert.equal(get('https://a.b.example.com/').allow, true);
    for (const url of [
      'https://example.com/',
      'https://evil-example.com/',
      'https://example.com.evil.net/',
      'https://notexample.com/',
      'https://example.com.',
    ]) {
      const decision = get(url);
      assert.equal(decision.allow, false, url);
      assert.equal(decision.rule, 'default-deny', url);
    }
  });

  it('ignores a trailing dot and upper case in the host', () => {
    assert.equal(get('https://API.Example.COM./x').rule, 'http.allow[0]=*.example.com');
    assert.equal(get('https://api.example.org./').rule, 'http.allow[1]=api.example.org');
    assert.equal(get('HTTPS://API.EXAMPLE.ORG/').allow, true);
  });

  it('matches internationalised names through punycode, either spelling', () => {
    assert.equal(get('https://bücher.de/').rule, 'http.allow[3]=bücher.de');
    assert.equal(get('https://BÜCHER.de/').rule, 'http.allow[3]=bücher.de');
    assert.equal(get('https://xn--bcher-kva.de/').rule, 'http.allow[3]=bücher.de');
    assert.equal(get('https://bucher.de/').allow, false);
  });

  it('allows only the default port of the scheme unless the rule names a port', () => {
    assert.equal(get('https://api.example.org/').rule, 'http.allow[1]=api.example.org');
    assert.equal(get('http://api.example.org/').rule, 'http.allow[1]=api.example.org');
    assert.equal(
      get('https://api.example.org:443/').allow,
      true,
      'an explicit default port is the default port',
    );
    assert.equal(get('https://api.example.org:8443/').rule, 'http.allow[2]=api.example.org:8443');
    const other = get('https://api.example.org:9443/');
    assert.equal(other.rule, 'default-deny');
    assert.match(other.reason, /port 9443/);
    assert.equal(get('http://api.example.org:443/').allow, false, '443 is not the default port of http');
    assert.equal(get('https://x.example.com:8443/').allow, false);
  });

  it('checks deny rules before allow rules', () => {
    const decision = get('https://bad.example.com/');
    assert.equal(decision.allow, false);
    assert.equal(decision.rule, 'http.deny[0]=bad.example.com');
    assert.equal(
      get('https://evil.example.org:8443/').rule,
      'http.deny[1]=evil.example.org',
      'a deny rule without port covers every port',
    );
    assert.equal(
      get('https://good.bad.example.com/').allow,
      true,
      'a plain deny rule does not cover subdomains',
    );
  });

  it('denies user info in the URL, whatever the host', () => {
    for (const url of [
      'http://api.example.org@evil.net/',
      'https://user:pw@api.example.com/',
      'https://:pw@api.example.com/',
    ]) {
      const decision = get(url);
      assert.equal(decision.rule, 'url-userinfo', url);
    }
  });

  it('denies IP literals in every notation unless a rule names that exact address and port', () => {
    for (const url of [
      'http://2130706433/',
      'http://0177.0.0.1/',
      'http://0x7f.1/',
      'http://127.1/',
      'http://[::ffff:127.0.0.1]/',
      'http://[::ffff:7f00:1]/',
      'http://[::1]/',
      'http://[0:0:0:0:0:0:0:1]:8080/',
      'http://169.254.169.254/latest/meta-data/',
      'http://[fd00:ec2::254]/',
      'http://0.0.0.0:8080/',
      'http://93.184.216.34/',
    ]) {
      const decision = get(url);
      assert.equal(decision.allow, false, url);
      assert.equal(decision.rule, 'ip-literal', url);
    }
    assert.match(get('http://2130706433/').reason, /loopback 127\.0\.0\.1/);
    assert.match(get('http://169.254.169.254/').reason, /cloud metadata/);
  });

  it('allows an IP literal named by a rule, in any notation of that address', () => {
    for (const url of [
      'http://127.0.0.1:8080/',
      'http://2130706433:8080/',
      'http://0x7f.0.0.1:8080/',
      'http://[::ffff:127.0.0.1]:8080/',
    ]) {
      const decision = get(url);
      assert.equal(decision.rule, 'http.allow[4]=127.0.0.1:8080', url);
      assert.deepEqual(decision.addresses, ['127.0.0.1'], url);
    }
    assert.equal(get('http://[0:0::1]:9000/').rule, 'http.allow[5]=[::1]:9000');
    assert.equal(get('http://127.0.0.1:8081/').rule, 'ip-literal');
  });

  it('treats localhost as a name that only a localhost rule allows', () => {
    assert.equal(get('http://localhost:3000/').rule, 'http.allow[6]=localhost:3000');
    assert.equal(get('http://LOCALHOST.:3000/').allow, true);
    assert.equal(get('http://localhost/').allow, false);
    assert.equal(
      get('http://127.0.0.1:3000/').rule,
      'ip-literal',
      'a localhost rule does not name an IP literal',
    );
  });

  it('allows single-label names when a rule names them exactly', () => {
    assert.equal(get('http://intranet/').rule, 'http.allow[7]=intranet');
  });

  it('denies schemes other than http and https', () => {
    for (const url of [
      'ftp://api.example.com/',
      'file:///etc/passwd',
      'ws://api.example.com/',
      'gopher://api.example.com/',
    ]) {
      assert.equal(get(url).rule, 'url-scheme', url);
    }
  });

  it('denies unparsable URLs, relative URLs, port 0 and invalid methods', () => {
    for (const url of ['not a url', '/relative/path', 'https://', 'http://1.2.3.4.5/', 'https://[::1/']) {
      assert.equal(get(url).rule, 'url-syntax', url);
    }
    assert.equal(get('https://api.example.com:0/').rule, 'url-syntax');
    assert.equal(get('https://api.example.com/', 'GET /x HTTP/1.1\r\n').rule, 'url-syntax');
    assert.equal(get('https://api.example.com/', 'POST').allow, true);
  });

  it('denies everything with an empty allow list', () => {
    const none = sandboxFor({});
    assert.equal(
      none.check({ type: 'http', method: 'GET', url: 'https://example.com/' }).rule,
      'default-deny',
    );
  });

  it('keeps the query string out of denial messages', async () => {
    await assert.rejects(
      sandbox.enforce({ type: 'http', method: 'GET', url: 'https://other.net/x?token=s3cr3t-value' }),
      (e: { code: string; message: string }) => {
        assert.equal(e.code, 'POLICY_DENIED');
        assert.match(e.message, /https:\/\/other\.net/);
        assert.doesNotMatch(e.message, /s3cr3t/);
        return true;
      },
    );
  });
});
