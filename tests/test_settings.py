"""config.toml: precedence (flags > file > defaults), origins, and one-line errors with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from core.settings import ConfigError, effective_settings, load_config
from tui.cli.command import main

CONFIG = """default_profile = "local"

[profiles.local]
model = "qwen"
base_url = "http://127.0.0.1:8080/v1"
api_key_env = "LOCAL_KEY"
context_window = 32768

[reference]
max_reference_bytes = 32768

[compaction]
threshold = 0.7
"""


def test_flags_override_the_file_which_overrides_the_defaults(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    config = load_config(str(path))
    settings = effective_settings(config, {"max_references": 2, "context_window": 65536}, {})
    assert settings["model"] == "qwen" and settings.origins["model"] == f"{path}:4"
    assert settings["context_window"] == 65536 and settings.origins["context_window"] == "--context-window"
    assert settings["max_reference_bytes"] == 32768 and settings.origins["max_reference_bytes"] == f"{path}:10"
    assert settings["compaction_threshold"] == 0.7 and settings.origins["compaction_threshold"] == f"{path}:13"
    assert settings["candidate_limit"] == 50 and settings.origins["candidate_limit"] == "default"
    assert settings["api_key_env"] == "LOCAL_KEY"


def test_a_missing_explicit_file_is_an_error_and_no_file_is_the_offline_default(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(str(tmp_path / "absent.toml"))
    empty = load_config(str((tmp_path / "empty.toml").resolve())) if (tmp_path / "empty.toml").touch() is None else None
    assert empty is not None and not empty.data.profiles
    settings = effective_settings(empty, {}, {})
    assert settings["backend"] == "echo" and settings.origins["backend"] == "default"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("[profiles.x]\ncontext_window = -5\n", "line 2: profiles.x.context_window"),
        ('[profiles.x]\napi_key = "sk-123"\n', "line 2: profiles.x.api_key: keys are never stored here"),
        ("[reference]\nmax_references = 9\n", "line 2: reference.max_references"),
        ("[search]\nbody_serch = true\n", "line 2: search.body_serch: unknown key"),
        ('default_profile = "nope"\n', "line 1: default_profile: no profile named 'nope'"),
        ("x = [\n", "not valid TOML"),
    ],
)
def test_a_bad_value_is_one_line_with_file_line_and_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text)
    with pytest.raises(SystemExit) as exited:
        main(["config", "--config", str(path)])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert message in err and str(path) in err and "SESSIONREF_CONFIG_INVALID" in err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert "sk-123" not in err


def test_sessionref_config_prints_every_setting_with_its_origin(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "config.toml"
    path.write_text(CONFIG)
    assert main(["config", "--config", str(path), "--max-references", "2"]) == 0
    out = capsys.readouterr().out
    assert f"config file: {path}" in out
    assert "max_references        2" in out and "--max-references" in out
    assert "qwen" in out and f"{path}:4" in out


def test_the_bounds_on_what_a_model_writes_come_from_the_file_and_reach_the_model_and_the_loop(
    tmp_path: Path,
) -> None:
    from core.settings import run_config
    from tui.cli.command import _model, _settings, build_parser

    path = tmp_path / "config.toml"
    path.write_text(
        CONFIG.replace('context_window = 32768', 'context_window = 32768\nmax_reply_bytes = 1000000\n'
                       'max_reasoning_chars = 5000\nreply_timeout = 120')
        + "max_summary_chars = 9000\n"
    )  # fmt: skip
    parser = build_parser()
    effective = _settings(parser, parser.parse_args(["--config", str(path), "--reply-timeout", "45"]))[1]
    model = _model(effective.settings)
    assert (model.reply_seconds, model.max_reply_bytes) == (45.0, 1_000_000)  # type: ignore[attr-defined]
    context = run_config(effective).compaction
    assert (context.max_reasoning_chars, context.policy.summary_max_chars) == (5000, 9000)
    with pytest.raises(SystemExit):
        _settings(parser, parser.parse_args(["--config", str(path), "--reply-timeout", "0"]))


def test_a_reference_may_take_a_share_of_a_bigger_window_and_an_explicit_budget_wins(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[profiles.big]\nmodel = "big"\ncontext_window = 1000000\n\n[reference]\ncontext_fraction = 0.05\n')
    settings = effective_settings(load_config(str(path)), {"profile": "big"}, {})
    assert settings["max_reference_bytes"] == 200_000  # max(65536, floor(1,000,000 x 4 x 0.05))
    assert settings.origins["max_reference_bytes"] == f"{path}:6 × the 1,000,000-token window (config)"
    small = effective_settings(load_config(str(path)), {"profile": "big", "context_window": 100_000}, {})
    assert small["max_reference_bytes"] == 65536  # never below rc.8's 64 KiB
    explicit = effective_settings(load_config(str(path)), {"profile": "big", "max_reference_bytes": 30000}, {})
    assert explicit["max_reference_bytes"] == 30000
    (tmp_path / "empty.toml").write_text("")
    plain = effective_settings(load_config(str(tmp_path / "empty.toml")), {}, {})
    assert plain["max_reference_bytes"] == 65536


def test_each_declared_setting_is_a_flag_a_file_key_and_a_line_of_sessionref_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Everything about a setting comes from its one declaration: the app's parser has its flag
    (storing into its name), the file accepts its key (and a profile its profile key) within its
    bounds and refuses one outside them, and ``sessionref config`` prints it."""
    from core.settings.config_file import _models

    Profile, ConfigFile = _models()  # (made the first time a file is read)
    from core.settings.declared import declarations
    from tui.cli.options import build_parser

    actions = {option: action for action in build_parser()._actions for option in action.option_strings}
    docs = (Path(__file__).resolve().parent.parent / "docs" / "configuration.md").read_text(encoding="utf-8")
    for name, default, declared in declarations():
        if declared.flag is not None:
            assert actions[declared.flag].dest == name, name
        if declared.file is not None:
            table, key = declared.file
            assert key in ConfigFile.model_fields[table].annotation.model_fields, name  # type: ignore[union-attr]
            assert f"[{table}]" in docs and key in docs, f"docs/configuration.md does not name {table}.{key}"
        if declared.profile is not None:
            assert declared.profile in Profile.model_fields, name
        if declared.gt is not None and declared.file is not None:
            table, key = declared.file
            path = tmp_path / f"{name}.toml"
            path.write_text(f"[{table}]\n{key} = {type(default)(declared.gt) if default is not None else 0}\n")
            with pytest.raises(ConfigError, match=f"line 2: {table}.{key}"):
                load_config(str(path))
    (tmp_path / "empty.toml").write_text("")
    assert main(["config", "--config", str(tmp_path / "empty.toml")]) == 0
    printed = capsys.readouterr().out
    for name, _default, _declared in declarations():
        assert f"  {name} " in printed, name


def test_a_store_is_a_url_or_a_libpq_connection_string_from_any_source(tmp_path: Path) -> None:
    conninfo = "host=/tmp/socket user=bob dbname=team"
    empty = tmp_path / "empty.toml"
    empty.write_text("")
    assert effective_settings(load_config(str(empty)), {"store": conninfo}, {}).settings.store == conninfo
    path = tmp_path / "config.toml"
    path.write_text(f'[store]\nurl = "{conninfo}"\n')
    assert effective_settings(load_config(str(path)), {}, {}).settings.store == conninfo
    with pytest.raises(ConfigError, match="--store must be a postgresql:// URL or a libpq connection string"):
        effective_settings(load_config(str(empty)), {"store": "mysql://db"}, {})


def test_compaction_keeps_less_than_it_compacts_at_and_says_where_each_came_from(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[compaction]\nretain = 0.9\n")
    with pytest.raises(ConfigError) as raised:
        effective_settings(load_config(str(path)), {"compaction_threshold": 0.5}, {})
    said = raised.value.line  # (the message, then its code, as every error is shown)
    assert "retain (0.9, from " in said and f"{path}:2" in said
    assert "threshold (0.5, from --compaction-threshold)" in said and "(SESSIONREF_CONFIG_INVALID)" in said
    kept = effective_settings(load_config(str(path)), {"compaction_threshold": 0.95}, {}).settings
    assert kept.compaction_retain == 0.9
