"""Properties of template.yaml that cfn-lint does not check (or checks only loosely): run by
infra/deploy-checks.sh in the deploy virtualenv (PyYAML comes with cfn-lint).

    python -m unittest infra/template_test.py   # from the repository root
"""
import json
import pathlib
import re
import tomllib
import unittest

import yaml

ROOT = pathlib.Path(__file__).resolve().parent.parent
FUNCTIONS = {"WebhookFunction": "webhook", "AgentFunction": "agent", "McpFunction": "mcp", "WebFunction": "web"}
VALID_RUNTIMES = {"provided.al2023"}
TABLE_ACTIONS = {
    "dynamodb:GetItem", "dynamodb:Query", "dynamodb:PutItem", "dynamodb:DeleteItem",
    "dynamodb:ConditionCheckItem", "dynamodb:TransactWriteItems",
}


class Loader(yaml.SafeLoader):
    """Reads CloudFormation's short-form tags (!Ref, !Sub, !If …) as {"Fn::…": value}."""


def _tag(loader, suffix, node):
    name = "Ref" if suffix == "Ref" else ("Condition" if suffix == "Condition" else f"Fn::{suffix}")
    if isinstance(node, yaml.ScalarNode):
        value = loader.construct_scalar(node)
        if suffix == "GetAtt" and isinstance(value, str):
            value = value.split(".", 1)
    elif isinstance(node, yaml.SequenceNode):
        value = loader.construct_sequence(node, deep=True)
    else:
        value = loader.construct_mapping(node, deep=True)
    return {name: value}


Loader.add_multi_constructor("!", _tag)


def load(path=ROOT / "template.yaml"):
    with open(path, encoding="utf-8") as f:
        return yaml.load(f, Loader=Loader)


def statements(function):
    """Every policy statement of a SAM function, an `Fn::If` resolved to its "true" branch."""
    out = []
    for policy in function["Properties"].get("Policies", []):
        assert isinstance(policy, dict) and "Statement" in policy, f"only inline statements: {policy}"
        for s in policy["Statement"]:
            if "Fn::If" in s:
                s = s["Fn::If"][1]
            out.append(s)
    return out


def as_list(value):
    return value if isinstance(value, list) else [value]


def rust_const(path, name):
    """The integer value of `const NAME: T = <int>;` in a Rust source file of this repository."""
    text = (ROOT / path).read_text(encoding="utf-8")
    match = re.search(rf"const {name}: \w+ = ([0-9_]+);", text)
    assert match, f"{name} not found in {path}"
    return int(match.group(1).replace("_", ""))


def evaluate(expr, params, conditions=None):
    """The value of a rule/condition expression (Fn::Equals/Not/And/Or, Ref, Condition) under
    `params` (parameter name -> value)."""
    if not isinstance(expr, dict):
        return expr
    (fn, arg), = expr.items()
    if fn == "Ref":
        return params[arg]
    if fn == "Condition":
        return evaluate(conditions[arg], params, conditions)
    if fn == "Fn::Equals":
        a, b = (evaluate(x, params, conditions) for x in arg)
        return str(a) == str(b)
    if fn == "Fn::Not":
        return not evaluate(arg[0], params, conditions)
    if fn == "Fn::And":
        return all(evaluate(x, params, conditions) for x in arg)
    if fn == "Fn::Or":
        return any(evaluate(x, params, conditions) for x in arg)
    raise AssertionError(f"unexpected function in a rule: {fn}")


def failed_rules(template, **overrides):
    """The names of the template's Rules whose assertions fail for the default parameters
    changed by `overrides` - what CloudFormation would refuse before creating anything."""
    params = {name: p.get("Default", "") for name, p in template["Parameters"].items()}
    unknown = set(overrides) - set(params)
    assert not unknown, f"no such parameters: {unknown}"
    params.update(overrides)
    failed = set()
    for name, rule in template.get("Rules", {}).items():
        if "RuleCondition" in rule and not evaluate(rule["RuleCondition"], params):
            continue
        for assertion in rule["Assertions"]:
            assert assertion.get("AssertDescription"), f"{name}: every assertion says what to fix"
            if not evaluate(assertion["Assert"], params):
                failed.add(name)
    return failed


def refs(value):
    """The resource names a Ref/GetAtt/Sub in `value` points to."""
    text = json.dumps(value)
    names = set()
    for key in ('"Ref": "', '"Fn::GetAtt": ["'):
        for part in text.split(key)[1:]:
            names.add(part.split('"', 1)[0])
    return names


class TemplateTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.t = load()
        cls.r = cls.t["Resources"]
        cls.globals = cls.t["Globals"]["Function"]

    def fn(self, name):
        return self.r[name]["Properties"]

    def test_functions_are_rust_on_provided_al2023_arm64_by_default(self):
        self.assertIn(self.globals["Runtime"], VALID_RUNTIMES)
        self.assertEqual(self.globals["Architectures"], [{"Ref": "Architecture"}])
        arch = self.t["Parameters"]["Architecture"]
        self.assertEqual(arch["Default"], "arm64")
        self.assertEqual(set(arch["AllowedValues"]), {"arm64", "x86_64"})
        for name, binary in FUNCTIONS.items():
            resource = self.r[name]
            self.assertEqual(resource["Type"], "AWS::Serverless::Function")
            self.assertNotIn("Runtime", resource["Properties"], "the runtime is set once, in Globals")
            self.assertEqual(resource["Metadata"]["BuildMethod"], "rust-cargolambda", name)
            self.assertEqual(resource["Metadata"]["BuildProperties"]["Binary"], binary, name)
            cargo = (ROOT / "functions" / binary / "Cargo.toml").read_text()
            self.assertIn(f'name = "{binary}"', cargo, f"{binary} is not a binary of functions/{binary}")
            props = resource["Properties"]
            # sam build runs cargo where CodeUri points: in the function's package Cargo builds
            # that package alone, with its own features; anywhere above it, every member's.
            self.assertNotIn("CodeUri", self.globals, "CodeUri is per function, never global")
            self.assertEqual(props.get("CodeUri"), f"functions/{binary}", name)
            self.assertIsInstance(props["MemorySize"], int)
            self.assertIsInstance(props["Timeout"], int)
            self.assertEqual(props["LoggingConfig"]["LogFormat"], "JSON", name)
            group = props["LoggingConfig"]["LogGroup"]["Ref"]
            self.assertEqual(self.r[group]["Type"], "AWS::Logs::LogGroup")
            self.assertEqual(self.r[group]["Properties"]["RetentionInDays"], {"Ref": "LogRetentionDays"})

    def test_release_profile_names_every_setting_cargo_lambda_would_add(self):
        # cargo-lambda's release build (what `sam build` runs) adds strip, thin LTO, one codegen
        # unit and panic="abort" for each of these the workspace profile leaves unset; naming
        # them keeps the deployed binary the one the tests and bench/RESULTS.md describe.
        release = tomllib.loads((ROOT / "Cargo.toml").read_text())["profile"]["release"]
        for setting in ("strip", "lto", "codegen-units", "panic"):
            self.assertIn(setting, release, f"[profile.release] leaves {setting} to cargo-lambda")
        self.assertEqual(release["panic"], "unwind", "a panicking tool or handler must not end the process")

    def test_timeouts(self):
        self.assertLessEqual(self.fn("WebhookFunction")["Timeout"], 15, "the webhook answers fast")
        agent = self.fn("AgentFunction")["Timeout"]
        self.assertGreaterEqual(agent, 12 * 60, "12 model calls; most take seconds, the longest minutes")
        self.assertLessEqual(agent, 900, "Lambda's maximum")
        for name in ("McpFunction", "WebFunction"):
            self.assertLessEqual(self.fn(name)["Timeout"], 30, "API Gateway's integration limit")

    def test_agent_consumes_the_fifo_queue_reporting_item_failures(self):
        events = self.fn("AgentFunction")["Events"]
        self.assertEqual(len(events), 1)
        (event,) = events.values()
        self.assertEqual(event["Type"], "SQS")
        p = event["Properties"]
        self.assertEqual(p["Queue"], {"Fn::GetAtt": ["TurnQueue", "Arn"]})
        self.assertEqual(p["FunctionResponseTypes"], ["ReportBatchItemFailures"])
        batch = p["BatchSize"]
        if isinstance(batch, dict):
            param = self.t["Parameters"][batch["Ref"]]
            self.assertLessEqual(param["MaxValue"], 10)
            self.assertGreaterEqual(param["MinValue"], 1)
            self.assertLessEqual(param["Default"], 10)
        else:
            self.assertLessEqual(batch, 10)
        concurrency = p["ScalingConfig"]["MaximumConcurrency"]
        if isinstance(concurrency, dict):
            param = self.t["Parameters"][concurrency["Ref"]]
            self.assertGreaterEqual(param["MinValue"], 2, "SQS's minimum maximum concurrency")
            concurrency = param["Default"]
        self.assertGreaterEqual(concurrency, 2)

    def test_agent_concurrency_can_be_reserved_and_is_not_by_default(self):
        reserved = self.fn("AgentFunction")["ReservedConcurrentExecutions"]
        self.assertEqual(reserved, {"Fn::If": ["HasAgentReservedConcurrency", {"Ref": "AgentReservedConcurrency"},
                                               {"Ref": "AWS::NoValue"}]})
        param = self.t["Parameters"]["AgentReservedConcurrency"]
        self.assertEqual(param["Default"], 0, "a new account's small quota may not allow reserving any")
        self.assertEqual(self.t["Conditions"]["HasAgentReservedConcurrency"],
                         {"Fn::Not": [{"Fn::Equals": [{"Ref": "AgentReservedConcurrency"}, 0]}]})

    def test_fifo_queue_and_dead_letter_queue(self):
        q = self.r["TurnQueue"]["Properties"]
        self.assertIs(q["FifoQueue"], True)
        self.assertIs(q.get("ContentBasedDeduplication", False), False, "dedupe ids are explicit")
        agent_timeout = self.fn("AgentFunction")["Timeout"]
        # Lambda refuses an SQS event source whose visibility timeout is below the function's
        # timeout; above it, the fallback (an init failure, a failed heartbeat) only grows.
        self.assertGreaterEqual(q["VisibilityTimeout"], agent_timeout, "Lambda's rule")
        self.assertLessEqual(q["VisibilityTimeout"], agent_timeout, "a short fallback: the heartbeat does the rest")
        redrive = q["RedrivePolicy"]
        self.assertEqual(redrive["deadLetterTargetArn"], {"Fn::GetAtt": ["DeadLetterQueue", "Arn"]})
        self.assertEqual(redrive["maxReceiveCount"], rust_const("lib/store/src/queue/schedule.rs", "RECEIVES_MAX"),
                         "the agent dead-letters on the receive the queue does")
        dlq = self.r["DeadLetterQueue"]["Properties"]
        self.assertIs(dlq["FifoQueue"], True, "a FIFO queue's DLQ must be FIFO")
        self.assertGreaterEqual(dlq["MessageRetentionPeriod"], 7 * 24 * 3600)
        alarms = [r["Properties"] for r in self.r.values() if r["Type"] == "AWS::CloudWatch::Alarm"]
        self.assertTrue(any(
            a["Namespace"] == "AWS/SQS" and a["MetricName"] == "ApproximateNumberOfMessagesVisible"
            and "DeadLetterQueue" in refs(a["Dimensions"]) for a in alarms), "an alarm on the DLQ's depth")

    def test_table_matches_infra_table_json(self):
        table = self.r["Table"]
        self.assertEqual(table["Type"], "AWS::DynamoDB::Table")
        self.assertEqual(table["DeletionPolicy"], "Retain")
        self.assertEqual(table["UpdateReplacePolicy"], "Retain")
        p = table["Properties"]
        definition = json.loads((ROOT / "infra" / "table.json").read_text())
        for key in ("AttributeDefinitions", "KeySchema", "BillingMode", "TimeToLiveSpecification"):
            self.assertEqual(p[key], definition[key], key)
        self.assertEqual(p["TimeToLiveSpecification"], {"AttributeName": "ttl", "Enabled": True})
        self.assertIs(p["PointInTimeRecoverySpecification"]["PointInTimeRecoveryEnabled"], True)
        self.assertIs(p["DeletionProtectionEnabled"], True)
        self.assertNotIn("GlobalSecondaryIndexes", p, "table.json has none")

    def test_media_bucket_is_private_encrypted_tls_only_and_expires(self):
        bucket = self.r["MediaBucket"]
        self.assertEqual(bucket["Type"], "AWS::S3::Bucket")
        # Consistent with the table: kept when the stack goes.
        self.assertEqual(bucket["DeletionPolicy"], self.r["Table"]["DeletionPolicy"])
        self.assertEqual(bucket["UpdateReplacePolicy"], self.r["Table"]["UpdateReplacePolicy"])
        p = bucket["Properties"]
        (sse,) = p["BucketEncryption"]["ServerSideEncryptionConfiguration"]
        self.assertIn(sse["ServerSideEncryptionByDefault"]["SSEAlgorithm"], {"AES256", "aws:kms"})
        block = p["PublicAccessBlockConfiguration"]
        self.assertEqual(block, {"BlockPublicAcls": True, "BlockPublicPolicy": True,
                                 "IgnorePublicAcls": True, "RestrictPublicBuckets": True})
        self.assertEqual(p["OwnershipControls"]["Rules"], [{"ObjectOwnership": "BucketOwnerEnforced"}])
        self.assertNotIn("AccessControl", p, "no ACLs")
        rules = p["LifecycleConfiguration"]["Rules"]
        expiring = [r for r in rules if r["Status"] == "Enabled" and "ExpirationInDays" in r and "Prefix" not in r
                    and "Filter" not in r]
        self.assertEqual(len(expiring), 1, "one rule expires every object")
        self.assertEqual(expiring[0]["ExpirationInDays"], rust_const("lib/store/src/limits.rs", "BLOB_RETENTION_DAYS"))
        # The bucket policy only denies (plain HTTP); access is granted by the agent's role alone.
        policies = [r for r in self.r.values() if r["Type"] == "AWS::S3::BucketPolicy"]
        self.assertEqual(len(policies), 1)
        self.assertEqual(policies[0]["Properties"]["Bucket"], {"Ref": "MediaBucket"})
        (tls,) = policies[0]["Properties"]["PolicyDocument"]["Statement"]
        self.assertEqual(tls["Effect"], "Deny")
        self.assertEqual(tls["Condition"], {"Bool": {"aws:SecureTransport": "false"}})

    def test_only_the_agent_reaches_the_media_bucket(self):
        p = self.policy("AgentFunction")
        self.assertEqual(set(as_list(p["MediaObjects"]["Action"])), {"s3:GetObject", "s3:PutObject"})
        self.assertEqual(p["MediaObjects"]["Resource"], {"Fn::Sub": "${MediaBucket.Arn}/*"})
        self.assertEqual(as_list(p["MediaList"]["Action"]), ["s3:ListBucket"])
        self.assertEqual(p["MediaList"]["Resource"], {"Fn::GetAtt": ["MediaBucket", "Arn"]})
        s3_statements = [s for s in statements(self.r["AgentFunction"])
                         if any(a.startswith("s3:") for a in as_list(s["Action"]))]
        self.assertEqual(len(s3_statements), 2, "no other S3 grant")
        env = self.fn("AgentFunction")["Environment"]["Variables"]
        self.assertEqual(env["STEWARD_BLOB_BUCKET"], {"Ref": "MediaBucket"})
        for name in FUNCTIONS:
            if name == "AgentFunction":
                continue
            text = json.dumps(self.fn(name))
            self.assertNotIn("MediaBucket", text, f"{name} names the media bucket")
            self.assertNotIn('"s3:', text, f"{name} has an S3 permission")
        for name, r in self.r.items():
            if r["Type"] in {"AWS::IAM::Role", "AWS::IAM::Policy", "AWS::IAM::ManagedPolicy"}:
                self.assertNotIn('"s3:', json.dumps(r), f"{name} grants S3")

    def test_secrets_are_parameter_names_never_values(self):
        secret_vars = {
            "WHATSAPP_APP_SECRET", "WHATSAPP_VERIFY_TOKEN", "WHATSAPP_ACCESS_TOKEN", "TELEGRAM_BOT_TOKEN",
            "TELEGRAM_WEBHOOK_SECRET", "ANTHROPIC_API_KEY", "OPENAI_API_KEY", "STEWARD_OIDC_CLIENT_SECRET",
        }
        for name in FUNCTIONS:
            env = self.fn(name).get("Environment", {}).get("Variables", {})
            for var in env:
                self.assertNotIn(var, secret_vars, f"{name}: {var} would put a secret in the environment")
        for pname, param in self.t["Parameters"].items():
            if any(w in pname.lower() for w in ("secret", "token", "apikey")) and pname != "SecretsKmsKeyArn":
                self.assertTrue(pname.endswith("Param"), f"{pname}: secrets are passed by SSM name")
                self.assertNotIn("NoEcho", param)

    def policy(self, name):
        by_sid = {}
        for s in statements(self.r[name]):
            self.assertEqual(s["Effect"], "Allow")
            self.assertNotIn("*", as_list(s["Resource"]), f"{name}: no wildcard resource")
            for action in as_list(s["Action"]):
                self.assertNotIn("*", action, f"{name}: no wildcard actions ({action})")
            by_sid[s["Sid"]] = s
        return by_sid

    def test_webhook_may_only_enqueue_and_read_its_secrets(self):
        p = self.policy("WebhookFunction")
        self.assertEqual(set(p), {"EnqueueTurns", "ReadOwnSecrets", "DecryptOwnSecrets"})
        self.assertEqual(as_list(p["EnqueueTurns"]["Action"]), ["sqs:SendMessage"])
        self.assertEqual(p["EnqueueTurns"]["Resource"], {"Fn::GetAtt": ["TurnQueue", "Arn"]})
        self.assert_secret_statements(p, {"WhatsappAppSecretParam", "WhatsappVerifyTokenParam", "TelegramWebhookSecretParam"})

    def test_agent_gets_the_table_its_secrets_and_bedrock_only_when_chosen(self):
        p = self.policy("AgentFunction")
        self.assertEqual(set(p), {"Table", "ChangeVisibility", "MediaObjects", "MediaList", "ReadOwnSecrets",
                                  "DecryptOwnSecrets", "InvokeModel", "InvokeModelThroughProfile"})
        self.assert_table(p["Table"])
        self.assertEqual(as_list(p["ChangeVisibility"]["Action"]), ["sqs:ChangeMessageVisibility"])
        self.assertEqual(p["ChangeVisibility"]["Resource"], {"Fn::GetAtt": ["TurnQueue", "Arn"]})
        env = self.fn("AgentFunction")["Environment"]["Variables"]
        self.assertEqual(env["STEWARD_QUEUE_URL"], {"Ref": "TurnQueue"}, "the queue whose visibility it changes")
        self.assert_secret_statements(p, {"AnthropicApiKeyParam", "OpenaiApiKeyParam", "WhatsappAccessTokenParam",
                                          "TelegramBotTokenParam"})
        bedrock = [s for s in self.r["AgentFunction"]["Properties"]["Policies"][0]["Statement"]
                   if "Fn::If" in s and s["Fn::If"][1].get("Sid") == "InvokeModel"]
        self.assertEqual(len(bedrock), 1)
        self.assertEqual(bedrock[0]["Fn::If"][0], "IsBedrock")
        self.assertEqual(self.t["Conditions"]["IsBedrock"], {"Fn::Equals": [{"Ref": "ModelProvider"}, "bedrock"]})
        self.assertEqual(as_list(p["InvokeModel"]["Action"]), ["bedrock:InvokeModelWithResponseStream"])
        # No model but the configured one (security review, finding 17): every resource names
        # ModelId, and the wildcard over foundation models holds only through that profile.
        for resource in as_list(p["InvokeModel"]["Resource"]):
            self.assertTrue(resource["Fn::Sub"].endswith("/${ModelId}"), resource)
        through = p["InvokeModelThroughProfile"]
        self.assertEqual(
            through["Condition"]["StringEquals"]["bedrock:InferenceProfileArn"]["Fn::Sub"],
            "arn:${AWS::Partition}:bedrock:${AWS::Region}:${AWS::AccountId}:inference-profile/${ModelId}",
        )
        rule = self.t["Rules"]["BedrockNeedsAModelId"]
        self.assertEqual(rule["RuleCondition"], {"Fn::Equals": [{"Ref": "ModelProvider"}, "bedrock"]})

    def test_mcp_gets_the_table_the_queue_and_its_state_key(self):
        p = self.policy("McpFunction")
        self.assertEqual(set(p), {"Table", "EnqueueTurns", "ReadOwnSecrets", "DecryptOwnSecrets"})
        self.assert_table(p["Table"])
        self.assertEqual(as_list(p["EnqueueTurns"]["Action"]), ["sqs:SendMessage"])
        self.assertEqual(p["EnqueueTurns"]["Resource"], {"Fn::GetAtt": ["TurnQueue", "Arn"]})
        self.assert_secret_statements(p, {"McpStateKeyParam"})
        env = self.fn("McpFunction")["Environment"]["Variables"]
        self.assertEqual(env["STEWARD_QUEUE_URL"], {"Ref": "TurnQueue"}, "held calls' chat notices")

    def test_web_gets_the_table_the_queue_and_its_secret(self):
        p = self.policy("WebFunction")
        self.assertEqual(set(p), {"Table", "EnqueueTurns", "ReadOwnSecrets", "DecryptOwnSecrets"})
        self.assert_table(p["Table"])
        self.assertEqual(as_list(p["EnqueueTurns"]["Action"]), ["sqs:SendMessage"])
        self.assertEqual(p["EnqueueTurns"]["Resource"], {"Fn::GetAtt": ["TurnQueue", "Arn"]})
        self.assert_secret_statements(p, {"OidcClientSecretParam"})

    def assert_table(self, s):
        self.assertEqual(set(as_list(s["Action"])), TABLE_ACTIONS)
        self.assertEqual(s["Resource"], {"Fn::GetAtt": ["Table", "Arn"]})

    def assert_secret_statements(self, p, params):
        read = p["ReadOwnSecrets"]
        self.assertEqual(as_list(read["Action"]), ["ssm:GetParameters"])
        self.assertEqual(refs(read["Resource"]) - {"AWS::NoValue"}, set(),
                         "parameters are named through Sub, never a wildcard")
        self.assertEqual({p for p in params if p in json.dumps(read["Resource"])}, params)
        text = json.dumps(read["Resource"])
        for other in self.t["Parameters"]:
            if other.endswith("Param") and other not in params:
                self.assertNotIn("${" + other + "}", text, f"reads another function's secret {other}")
        decrypt = p["DecryptOwnSecrets"]
        self.assertEqual(as_list(decrypt["Action"]), ["kms:Decrypt"])
        self.assertIn("kms:ViaService", decrypt["Condition"]["StringEquals"])

    def test_routes(self):
        integrations = {n: r["Properties"]["IntegrationUri"]["Fn::GetAtt"][0]
                        for n, r in self.r.items() if r["Type"] == "AWS::ApiGatewayV2::Integration"}
        routes = {}
        for r in self.r.values():
            if r["Type"] == "AWS::ApiGatewayV2::Route":
                target = r["Properties"]["Target"]["Fn::Sub"]
                routes[r["Properties"]["RouteKey"]] = integrations[target.split("${", 1)[1].rstrip("}")]
        self.assertEqual(routes, {
            "ANY /webhooks/{proxy+}": "WebhookFunction",
            "GET /healthz": "WebhookFunction",
            "ANY /mcp": "McpFunction",
            "ANY /": "WebFunction",
            "ANY /app": "WebFunction",
            "ANY /app/{proxy+}": "WebFunction",
            "ANY /api/{proxy+}": "WebFunction",
            "ANY /e/{proxy+}": "WebFunction",
        })
        for r in self.r.values():
            if r["Type"] == "AWS::ApiGatewayV2::Integration":
                self.assertEqual(r["Properties"]["PayloadFormatVersion"], "2.0")
        stages = [r["Properties"] for r in self.r.values() if r["Type"] == "AWS::ApiGatewayV2::Stage"]
        self.assertEqual([s["StageName"] for s in stages], ["$default"])
        # Separate throttles (security review, finding 17): every route has its own budget,
        # webhooks the largest of the routes callers can flood, all within the stage ceiling.
        settings = stages[0]["RouteSettings"]
        self.assertEqual(set(settings), set(routes) - {"GET /healthz"})
        ceiling = stages[0]["DefaultRouteSettings"]["ThrottlingRateLimit"]
        for key, s in settings.items():
            self.assertLessEqual(s["ThrottlingRateLimit"], ceiling, key)
            self.assertGreaterEqual(s["ThrottlingBurstLimit"], s["ThrottlingRateLimit"], key)
        hooks = settings["ANY /webhooks/{proxy+}"]["ThrottlingRateLimit"]
        for key in ("ANY /mcp", "ANY /e/{proxy+}", "ANY /api/{proxy+}"):
            self.assertLess(settings[key]["ThrottlingRateLimit"], hooks, key)
        depends = set(self.r["HttpApiStage"]["DependsOn"])
        route_names = {n for n, r in self.r.items() if r["Type"] == "AWS::ApiGatewayV2::Route"}
        self.assertEqual(depends, route_names)
        for name in ("WebhookFunction", "McpFunction", "WebFunction"):
            self.assertTrue(any(r["Type"] == "AWS::Lambda::Permission"
                                and r["Properties"]["FunctionName"] == {"Ref": name} for r in self.r.values()))

    def test_model_providers_and_the_openai_settings(self):
        provider = self.t["Parameters"]["ModelProvider"]
        self.assertEqual(set(provider["AllowedValues"]), {"anthropic", "bedrock", "openai", "none"})
        env = self.fn("AgentFunction")["Environment"]["Variables"]
        self.assertEqual(env["OPENAI_API_KEY_PARAM"], {"Fn::If": ["HasOpenaiKey", {"Ref": "OpenaiApiKeyParam"}, ""]})
        self.assertEqual(env["OPENAI_BASE_URL"], {"Fn::If": ["HasOpenaiBaseUrl", {"Ref": "OpenaiBaseUrl"}, {"Ref": "AWS::NoValue"}]})
        key = self.t["Parameters"]["OpenaiApiKeyParam"]
        self.assertEqual(key["AllowedPattern"], self.t["Parameters"]["AnthropicApiKeyParam"]["AllowedPattern"])
        url = re.compile(self.t["Parameters"]["OpenaiBaseUrl"]["AllowedPattern"])
        for ok in ("", "https://api.openai.com/v1", "http://10.0.0.5:8000/v1"):
            self.assertTrue(url.fullmatch(ok), ok)
        for bad in ("api.openai.com", "ftp://x", "https://a b"):
            self.assertFalse(url.fullmatch(bad), bad)

    def test_rules_refuse_incoherent_parameters(self):
        t = self.t
        self.assertEqual(failed_rules(t), set(), "the defaults deploy")
        self.assertEqual(failed_rules(t, ModelProvider="bedrock"), {"BedrockNeedsAModelId"})
        self.assertEqual(failed_rules(t, ModelProvider="bedrock", ModelId="anthropic.claude-x-v1:0"), set())
        self.assertEqual(failed_rules(t, ModelProvider="openai"), {"OpenaiNeedsAModelAndAKeyOrServer"})
        self.assertEqual(failed_rules(t, ModelProvider="openai", ModelId="gpt-5-mini"), {"OpenaiNeedsAModelAndAKeyOrServer"})
        self.assertEqual(failed_rules(t, ModelProvider="openai", ModelId="gpt-5-mini", OpenaiApiKeyParam="/k"), set())
        self.assertEqual(failed_rules(t, ModelProvider="openai", ModelId="llama", OpenaiBaseUrl="http://vllm:8000/v1"), set())
        self.assertEqual(failed_rules(t, AnthropicApiKeyParam=""), {"AnthropicNeedsAKey"})
        self.assertEqual(failed_rules(t, ModelProvider="none", AnthropicApiKeyParam=""), set())
        whatsapp = dict(WhatsappAppSecretParam="/a", WhatsappVerifyTokenParam="/v", WhatsappAccessTokenParam="/t",
                        WhatsappPhoneNumberId="1065")
        self.assertEqual(failed_rules(t, **whatsapp), set())
        for missing in whatsapp:
            half = dict(whatsapp, **{missing: ""})
            self.assertEqual(failed_rules(t, **half), {"WhatsappIsWholeOrOff"}, missing)
        self.assertEqual(failed_rules(t, TelegramBotTokenParam="/b"), {"TelegramIsWholeOrOff"})
        self.assertEqual(failed_rules(t, TelegramWebhookSecretParam="/s"), {"TelegramIsWholeOrOff"})
        self.assertEqual(failed_rules(t, TelegramBotTokenParam="/b", TelegramWebhookSecretParam="/s"), set())
        self.assertEqual(failed_rules(t, OidcIssuer="https://id.example.org"), {"OwnIssuerNeedsAClientId"})
        self.assertEqual(failed_rules(t, OidcIssuer="https://id.example.org", OidcClientId="c"), set())

    def test_retention_reaches_every_function_that_writes_rows(self):
        param = self.t["Parameters"]["RetentionDays"]
        self.assertEqual(param["Type"], "Number")
        self.assertEqual(param["Default"], rust_const("lib/harness/src/limits.rs", "RETENTION_DAYS"))
        self.assertEqual(param["MinValue"], rust_const("lib/harness/src/limits.rs", "RETENTION_DAYS_MIN"))
        self.assertEqual(param["MaxValue"], rust_const("lib/harness/src/limits.rs", "RETENTION_DAYS_MAX"))
        for name in ("AgentFunction", "McpFunction", "WebFunction"):
            env = self.fn(name)["Environment"]["Variables"]
            self.assertEqual(env.get("STEWARD_RETENTION_DAYS"), {"Ref": "RetentionDays"}, name)
        self.assertNotIn("STEWARD_RETENTION_DAYS", self.fn("WebhookFunction")["Environment"]["Variables"],
                         "the webhook writes no rows")

    def test_cognito_domain_is_unique_per_stack(self):
        domain = self.r["UserPoolDomain"]["Properties"]["Domain"]["Fn::If"]
        self.assertEqual(domain[0], "HasCognitoDomainPrefix")
        default = json.dumps(domain[2])
        self.assertIn("AWS::StackId", default, "two stacks in one account must not collide")
        self.assertNotIn("AWS::AccountId", default)
        # The expression picks the last group of the stack id's UUID.
        fmt, values = domain[2]["Fn::Sub"]
        select = values["Suffix"]["Fn::Select"]
        stack_id = "arn:aws:cloudformation:eu-west-1:123456789012:stack/steward/51af3dc0-da77-11e4-872e-1234567db123"
        inner = select[1]["Fn::Split"][1]["Fn::Select"]
        uuid = stack_id.split(inner[1]["Fn::Split"][0])[inner[0]]
        suffix = uuid.split(select[1]["Fn::Split"][0])[select[0]]
        prefix = fmt.replace("${Suffix}", suffix)
        self.assertEqual(prefix, "steward-1234567db123")
        self.assertRegex(prefix, self.t["Parameters"]["CognitoDomainPrefix"]["AllowedPattern"])

    def alarms(self):
        return {n: r["Properties"] for n, r in self.r.items() if r["Type"] == "AWS::CloudWatch::Alarm"}

    @staticmethod
    def watched(alarm):
        """(namespace, metric, {dimension: value}) of every metric an alarm reads."""
        if "MetricName" in alarm:
            return [(alarm["Namespace"], alarm["MetricName"], {d["Name"]: d["Value"] for d in alarm["Dimensions"]})]
        out = []
        for m in alarm["Metrics"]:
            if "MetricStat" in m:
                metric = m["MetricStat"]["Metric"]
                out.append((metric["Namespace"], metric["MetricName"],
                            {d["Name"]: d["Value"] for d in metric["Dimensions"]}))
        return out

    def test_alarms_watch_real_failures_and_notify_one_topic(self):
        alarms = self.alarms()
        topic = {"Fn::If": ["HasAlarmTopic", {"Ref": "AlarmTopicArn"}, {"Ref": "AlarmTopic"}]}
        self.assertEqual(self.r["AlarmTopic"]["Type"], "AWS::SNS::Topic")
        self.assertEqual(self.r["AlarmTopic"]["Condition"], "CreateAlarmTopic")
        self.assertEqual(self.r["AlarmEmailSubscription"]["Properties"]["TopicArn"], {"Ref": "AlarmTopic"})
        runbook = (ROOT / "infra" / "RUNBOOK.md").read_text(encoding="utf-8")
        for name, a in alarms.items():
            self.assertEqual(a["AlarmActions"], [topic], name)
            self.assertEqual(a["OKActions"], [topic], name)
            self.assertEqual(a["TreatMissingData"], "notBreaching", name)
            self.assertIn("RUNBOOK", a["AlarmDescription"], name)
            self.assertIn(f"### {name}", runbook, f"infra/RUNBOOK.md has no entry for {name}")
            if "Metrics" in a:
                returned = [m for m in a["Metrics"] if m.get("ReturnData", True)]
                self.assertEqual(len(returned), 1, f"{name}: one expression is the alarm's value")
                ids = {m["Id"] for m in a["Metrics"] if "MetricStat" in m}
                self.assertTrue(ids and all(i in returned[0]["Expression"] for i in ids), name)
        seen = {(ns if isinstance(ns, str) else "Steward", metric, tuple(sorted(
            (k, json.dumps(v)) for k, v in dims.items())))
            for a in alarms.values() for ns, metric, dims in self.watched(a)}

        def watches(namespace, metric, **dims):
            want = tuple(sorted((k, json.dumps(v)) for k, v in dims.items()))
            return (namespace, metric, want) in seen
        fn = lambda name: {"Ref": name}
        self.assertTrue(watches("AWS/Lambda", "Errors", FunctionName=fn("AgentFunction")))
        self.assertTrue(watches("AWS/Lambda", "Throttles", FunctionName=fn("AgentFunction")))
        self.assertTrue(watches("AWS/Lambda", "Duration", FunctionName=fn("AgentFunction")))
        self.assertTrue(watches("AWS/Lambda", "Errors", FunctionName=fn("WebhookFunction")))
        self.assertTrue(watches("AWS/Lambda", "Throttles", FunctionName=fn("WebhookFunction")))
        self.assertTrue(watches("AWS/SQS", "ApproximateAgeOfOldestMessage",
                                QueueName={"Fn::GetAtt": ["TurnQueue", "QueueName"]}))
        self.assertTrue(watches("AWS/ApiGateway", "5xx", ApiId=fn("HttpApi"), Stage="$default"))
        self.assertTrue(watches("AWS/DynamoDB", "ReadThrottleEvents", TableName=fn("Table")))
        self.assertTrue(watches("AWS/DynamoDB", "WriteThrottleEvents", TableName=fn("Table")))
        for op in ("GetItem", "Query", "PutItem", "TransactWriteItems"):
            self.assertTrue(watches("AWS/DynamoDB", "SystemErrors", TableName=fn("Table"), Operation=op), op)
        # The agent's own metric lines: the namespace it is given, the names and kinds it emits.
        env = self.fn("AgentFunction")["Environment"]["Variables"]
        namespace = env["STEWARD_METRICS_NAMESPACE"]
        self.assertEqual(namespace, {"Fn::Sub": "Steward/${AWS::StackName}"})
        code = "\n".join(
            f.read_text(encoding="utf-8")
            for f in sorted((ROOT / "lib" / "harness" / "src" / "metrics").glob("*.rs"))
        )
        self.assertTrue(code, "lib/harness/src/metrics/ has no source")
        own = [(m, dims) for a in alarms.values() for ns, m, dims in self.watched(a) if ns == namespace]
        for kind in ("authentication", "access_denied", "throttled", "timeout", "refused"):
            self.assertIn(("ModelFailures", {"Kind": kind}), own, kind)
        for reason in ("refused", "failed", "no_sender", "unreadable"):
            self.assertIn(("RepliesNotSent", {"Reason": reason}), own, reason)
        for metric, dims in own:
            self.assertIn(f'"{metric}"', code, f"the agent never emits {metric}")
            for value in dims.values():
                self.assertIn(f'"{value}"', code, f"the agent never emits {metric} {value}")

    def test_cognito_is_optional(self):
        for name in ("UserPool", "UserPoolClient", "UserPoolDomain"):
            self.assertEqual(self.r[name]["Condition"], "CreateCognito")
        self.assertIs(self.r["UserPoolClient"]["Properties"]["GenerateSecret"], False)

    def test_outputs(self):
        for name in ("WhatsappWebhookUrl", "TelegramWebhookUrl", "McpUrl", "WebUrl"):
            self.assertIn(name, self.t["Outputs"])


class CheckerCatchesMistakes(unittest.TestCase):
    """The checks above fail on the mistakes cfn-lint lets through."""

    def mutated(self, change):
        t = load()
        change(t)
        case = TemplateTest()
        TemplateTest.t, TemplateTest.r, TemplateTest.globals = t, t["Resources"], t["Globals"]["Function"]
        return case

    def tearDown(self):
        TemplateTest.setUpClass()

    def test_a_misspelled_response_type_fails(self):
        def change(t):
            t["Resources"]["AgentFunction"]["Properties"]["Events"]["Turns"]["Properties"]["FunctionResponseTypes"] = ["ReportBatchItemFailure"]
        with self.assertRaises(AssertionError):
            self.mutated(change).test_agent_consumes_the_fifo_queue_reporting_item_failures()

    def test_an_invalid_runtime_fails(self):
        def change(t):
            t["Globals"]["Function"]["Runtime"] = "provided.al2024"
        with self.assertRaises(AssertionError):
            self.mutated(change).test_functions_are_rust_on_provided_al2023_arm64_by_default()

    def test_a_function_built_from_the_workspace_root_fails(self):
        def change(t):
            t["Resources"]["WebhookFunction"]["Properties"]["CodeUri"] = "."
        with self.assertRaises(AssertionError):
            self.mutated(change).test_functions_are_rust_on_provided_al2023_arm64_by_default()

    def test_a_visibility_timeout_below_the_function_timeout_fails(self):
        def change(t):
            t["Resources"]["TurnQueue"]["Properties"]["VisibilityTimeout"] = 600
        with self.assertRaises(AssertionError):
            self.mutated(change).test_fifo_queue_and_dead_letter_queue()

    def test_the_old_ninety_minute_visibility_fails(self):
        def change(t):
            t["Resources"]["TurnQueue"]["Properties"]["VisibilityTimeout"] = 5400
        with self.assertRaises(AssertionError):
            self.mutated(change).test_fifo_queue_and_dead_letter_queue()

    def test_a_max_receive_count_other_than_the_agents_fails(self):
        def change(t):
            t["Resources"]["TurnQueue"]["Properties"]["RedrivePolicy"]["maxReceiveCount"] = 3
        with self.assertRaises(AssertionError):
            self.mutated(change).test_fifo_queue_and_dead_letter_queue()

    def test_an_agent_without_the_visibility_permission_fails(self):
        def change(t):
            statements = t["Resources"]["AgentFunction"]["Properties"]["Policies"][0]["Statement"]
            statements[:] = [s for s in statements if s.get("Sid") != "ChangeVisibility"]
        with self.assertRaises(AssertionError):
            self.mutated(change).test_agent_gets_the_table_its_secrets_and_bedrock_only_when_chosen()

    def test_a_broad_webhook_policy_fails(self):
        def change(t):
            t["Resources"]["WebhookFunction"]["Properties"]["Policies"][0]["Statement"].append(
                {"Sid": "Table", "Effect": "Allow", "Action": "dynamodb:GetItem", "Resource": {"Fn::GetAtt": ["Table", "Arn"]}})
        with self.assertRaises(AssertionError):
            self.mutated(change).test_webhook_may_only_enqueue_and_read_its_secrets()

    def test_an_alarm_without_the_topic_fails(self):
        def change(t):
            del t["Resources"]["AgentErrorsAlarm"]["Properties"]["OKActions"]
        with self.assertRaises((AssertionError, KeyError)):
            self.mutated(change).test_alarms_watch_real_failures_and_notify_one_topic()

    def test_a_missing_agent_errors_alarm_fails(self):
        def change(t):
            del t["Resources"]["AgentErrorsAlarm"]
        with self.assertRaises(AssertionError):
            self.mutated(change).test_alarms_watch_real_failures_and_notify_one_topic()

    def test_a_model_kind_the_code_does_not_emit_fails(self):
        def change(t):
            metrics = t["Resources"]["ModelAccessAlarm"]["Properties"]["Metrics"]
            metrics[1]["MetricStat"]["Metric"]["Dimensions"][0]["Value"] = "auth"
        with self.assertRaises(AssertionError):
            self.mutated(change).test_alarms_watch_real_failures_and_notify_one_topic()

    def test_a_dropped_channel_rule_fails(self):
        def change(t):
            del t["Rules"]["WhatsappIsWholeOrOff"]
        with self.assertRaises(AssertionError):
            self.mutated(change).test_rules_refuse_incoherent_parameters()

    def test_a_function_without_the_retention_fails(self):
        def change(t):
            del t["Resources"]["WebFunction"]["Properties"]["Environment"]["Variables"]["STEWARD_RETENTION_DAYS"]
        with self.assertRaises(AssertionError):
            self.mutated(change).test_retention_reaches_every_function_that_writes_rows()

    def test_a_retention_minimum_below_the_codes_fails(self):
        def change(t):
            t["Parameters"]["RetentionDays"]["MinValue"] = 1
        with self.assertRaises(AssertionError):
            self.mutated(change).test_retention_reaches_every_function_that_writes_rows()

    def test_a_public_media_bucket_fails(self):
        def change(t):
            t["Resources"]["MediaBucket"]["Properties"]["PublicAccessBlockConfiguration"]["RestrictPublicBuckets"] = False
        with self.assertRaises(AssertionError):
            self.mutated(change).test_media_bucket_is_private_encrypted_tls_only_and_expires()

    def test_a_media_expiry_other_than_the_codes_fails(self):
        def change(t):
            t["Resources"]["MediaBucket"]["Properties"]["LifecycleConfiguration"]["Rules"][0]["ExpirationInDays"] = 90
        with self.assertRaises(AssertionError):
            self.mutated(change).test_media_bucket_is_private_encrypted_tls_only_and_expires()

    def test_an_unencrypted_media_bucket_fails(self):
        def change(t):
            del t["Resources"]["MediaBucket"]["Properties"]["BucketEncryption"]
        with self.assertRaises((AssertionError, KeyError)):
            self.mutated(change).test_media_bucket_is_private_encrypted_tls_only_and_expires()

    def test_media_access_for_another_function_fails(self):
        def change(t):
            t["Resources"]["WebFunction"]["Properties"]["Policies"][0]["Statement"].append(
                {"Sid": "Media", "Effect": "Allow", "Action": "s3:GetObject",
                 "Resource": {"Fn::Sub": "${MediaBucket.Arn}/*"}})
        with self.assertRaises(AssertionError):
            self.mutated(change).test_only_the_agent_reaches_the_media_bucket()

    def test_a_broader_agent_media_grant_fails(self):
        def change(t):
            for s in t["Resources"]["AgentFunction"]["Properties"]["Policies"][0]["Statement"]:
                if s.get("Sid") == "MediaObjects":
                    s["Action"].append("s3:DeleteObject")
        with self.assertRaises(AssertionError):
            self.mutated(change).test_only_the_agent_reaches_the_media_bucket()

    def test_an_account_wide_cognito_domain_fails(self):
        def change(t):
            t["Resources"]["UserPoolDomain"]["Properties"]["Domain"]["Fn::If"][2] = {"Fn::Sub": "steward-${AWS::AccountId}"}
        with self.assertRaises((AssertionError, TypeError, ValueError)):
            self.mutated(change).test_cognito_domain_is_unique_per_stack()


if __name__ == "__main__":
    unittest.main()
