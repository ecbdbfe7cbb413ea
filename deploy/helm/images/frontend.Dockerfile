# A frontend's image. Build from the repository root after `make setup`:
#   docker build -f deploy/helm/images/frontend.Dockerfile -t REGISTRY/sand/frontend:0.1.0 .
FROM eclipse-temurin:17-jre
COPY frontend/target/frontend.jar /opt/sand/frontend.jar
CMD ["java", "-XX:+UseSerialGC", "-jar", "/opt/sand/frontend.jar", "--config", "/etc/sand/cluster.json"]
