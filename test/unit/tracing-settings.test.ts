import { expect } from 'chai';
import { tracingSettings } from '../../runtime/observability/tracing';

describe('tracing settings from the OTEL_* variables (runtime/observability/tracing.ts)', () => {
  it('off unless an OTLP endpoint or the otlp exporter is asked for; OTEL_SDK_DISABLED and exporter none win', () => {
    expect(tracingSettings({})).to.equal(undefined);
    expect(tracingSettings({ OTEL_SERVICE_NAME: 'gw' })).to.equal(undefined);
    expect(
      tracingSettings({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }),
    ).to.equal(undefined);
    expect(tracingSettings({ OTEL_SDK_DISABLED: 'true', OTEL_TRACES_EXPORTER: 'otlp' })).to.equal(undefined);
    expect(tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp' })?.url).to.equal('http://localhost:4318/v1/traces');
  });

  it('the general endpoint gets /v1/traces, the traces endpoint is used as given', () => {
    expect(tracingSettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318/' })?.url).to.equal(
      'http://collector:4318/v1/traces',
    );
    expect(
      tracingSettings({
        OTEL_EXPORTER_OTLP_ENDPOINT: 'http://a:4318',
        OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://b:9999/custom',
      })?.url,
    ).to.equal('http://b:9999/custom');
  });

  it('the resource: OTEL_RESOURCE_ATTRIBUTES, service.name from OTEL_SERVICE_NAME, else tollgate', () => {
    const on = { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' };
    expect(tracingSettings(on)?.resource).to.deep.equal({ 'service.name': 'tollgate' });
    expect(
      tracingSettings({ ...on, OTEL_RESOURCE_ATTRIBUTES: 'deployment.environment=prod,team=a%20b' })?.resource,
    ).to.deep.equal({
      'deployment.environment': 'prod',
      team: 'a b',
      'service.name': 'tollgate',
    });
    expect(
      tracingSettings({ ...on, OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs' })?.resource['service.name'],
    ).to.equal('from-attrs');
    expect(
      tracingSettings({ ...on, OTEL_RESOURCE_ATTRIBUTES: 'service.name=from-attrs', OTEL_SERVICE_NAME: 'named' })
        ?.resource['service.name'],
    ).to.equal('named');
  });

  it('says what it does not follow: another protocol than http/json, another exporter', () => {
    const s = tracingSettings({ OTEL_TRACES_EXPORTER: 'otlp,zipkin', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' });
    expect(s?.warnings).to.have.length(2);
    expect(s?.warnings.join('\n'))
      .to.match(/zipkin/)
      .and.to.match(/grpc/);
  });
});
