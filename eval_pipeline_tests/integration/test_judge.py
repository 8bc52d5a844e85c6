"""llm_judge: structured verdicts, the pinned judge recorded, the offline judge is stable;
and the same evaluator over real HTTP (ChatOpenAI against the local server)."""

from __future__ import annotations

from eval_pipeline.evaluators import llm_judge
from eval_pipeline.evaluators.llm_judge import judge_prompt_hash
from eval_pipeline.llm.factory import create_chat_model
from eval_pipeline.llm.model_settings import LLMSettings
from eval_pipeline.llm.offline import OfflineChatModel
from eval_pipeline_tests.model_server import LocalOpenAIServer

RUBRIC = "Is the answer polite and does it mention the price?"


def grade(judge, response):
    return judge(input={"message": "how much is it?"}, output={"response": response})


def test_offline_judge_scores_and_records_the_judge():
    judge = llm_judge(RUBRIC, OfflineChatModel(), name="tone")
    good = grade(judge, "Happy to help! The price is $20.")
    assert good.name == "tone" and good.value == 1.0 and "polite" in good.comment
    assert good.metadata == {
        "judge_model": "offline",
        "judge_prompt_hash": judge_prompt_hash(RUBRIC),
    }
    assert grade(judge, "").value == 0.0
    assert grade(judge, "Figure it out yourself.").value == 0.0
    assert grade(judge, "It is 20 dollars.").value == 0.5
    assert grade(judge, "Happy to help! The price is $20.").value == good.value  # stable
    assert judge_prompt_hash(RUBRIC) != judge_prompt_hash(RUBRIC + " Be strict.")


def test_judge_over_http_gives_the_same_verdicts():
    with LocalOpenAIServer() as server:
        settings = LLMSettings.create(
            model="judge-model", base_url=server.base_url, api_key="sk-test-judge"
        )
        judge = llm_judge(RUBRIC, create_chat_model(settings))
        remote = grade(judge, "Happy to help! The price is $20.")
    assert remote.value == 1.0 and remote.metadata["judge_model"] == "judge-model"
